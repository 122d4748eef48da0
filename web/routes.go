package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/static"
)

// Handler returns the router: the index of every URL Tidemark serves.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	// The client's address first, so every handler and middleware keys on
	// the client rather than on a proxy in front.
	r.Use(clientAddr(s.trusted), s.recoverPanics)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	if !s.metricsElsewhere {
		r.Method(http.MethodGet, "/metrics", s.MetricsHandler())
	}

	// Webhooks authenticate by signature, not by session or token.
	r.Post("/webhooks/{tenant}/{provider}", s.handleWebhook)

	r.Route("/api/v1/tenants/{tenant}", func(r chi.Router) {
		r.Use(s.requireToken)
		s.apiRoutes(r)
	})

	r.Handle("/static/*", staticFiles())
	// Browsers ask for /favicon.ico where a page names no icon (a JSON
	// answer, an error); the console's pages name the SVG.
	r.Get("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		http.ServeFileFS(w, r, static.FS, "img/favicon.ico")
	})

	// The console: forms capped, sessions, cross-origin protection on every
	// state-changing request, then the operator, then the tenant from their
	// membership.
	r.Group(func(r chi.Router) {
		csrf := http.NewCrossOriginProtection()
		r.Use(s.securityHeaders, limitConsoleBody, s.loadSession, csrf.Handler)
		r.Get("/login", s.handleLoginPage)
		r.Post("/login", s.handleLogin)
		r.Group(func(r chi.Router) {
			r.Use(s.requireUser)
			r.Get("/", s.handleHome)
			r.Post("/logout", s.handleLogout)
			s.adminRoutes(r)
			r.Route("/t/{tenant}", func(r chi.Router) {
				r.Use(s.requireTenant)
				s.overviewRoutes(r)
				s.eventRoutes(r)
				s.recordRoutes(r)
				s.conflictRoutes(r)
				s.providerRoutes(r)
				s.peopleRoutes(r)
				s.memberRoutes(r)
				s.auditRoutes(r)
				s.repairRoutes(r)
				s.deliveryRoutes(r)
				s.replayRoutes(r)
			})
		})
	})
	return r
}

// staticFiles serves the embedded assets; their URLs carry a content hash,
// so they may be cached for good.
func staticFiles() http.Handler {
	files := http.StripPrefix("/static/", http.FileServerFS(static.FS))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") != "" {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		files.ServeHTTP(w, r)
	})
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ping(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, "database unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
