package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/static"
	"github.com/tidemark/tidemark/web/httpx"
	"github.com/tidemark/tidemark/web/mcp"
)

// Handler returns the router: the index of every URL Tidemark serves.
// Each surface's own table is in its routes.go; testdata/routes.txt
// lists every route, and TestRoutes keeps it current.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	// The client's address first, so every handler and middleware keys on
	// the client rather than on a proxy in front; then the request's log
	// context and span, so that a panic's 500 is logged under its id.
	r.Use(httpx.ClientAddr(s.trusted), httpx.Observe, httpx.RecoverPanics(s.log), httpx.NoSniff)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	if !s.metricsElsewhere {
		r.Method(http.MethodGet, "/metrics", s.MetricsHandler())
	}

	// Webhooks authenticate by signature, not by session or token.
	s.hook.Routes(r) // POST /webhooks/{tenant}/{provider}

	// The API's OpenAPI document: public, outside the token's routers.
	r.Get("/api/v1/openapi.json", s.handleOpenAPI)
	// The MCP server: any tenant's API token, which decides the tenant. Its
	// tools call the tenant API in-process, on a router of their own, as
	// part of the MCP request (its log context, span and client address).
	inProcess := chi.NewRouter()
	s.tenantAPI(inProcess)
	r.Method(http.MethodPost, "/api/v1/mcp", mcp.New(s.api, inProcess, s.log))
	// The JSON API: a bearer token of the tenant.
	s.tenantAPI(r)
	// The admin API: an admin token, no tenant.
	r.Route("/api/v1/admin", s.api.AdminRoutes)

	r.Handle("/static/*", staticFiles())
	// Browsers ask for /favicon.ico where a page names no icon (a JSON
	// answer, an error); the console's pages name the SVG.
	r.Get("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		http.ServeFileFS(w, r, static.FS, "img/favicon.ico")
	})

	// The console: sessions, cross-origin protection, the operator, the
	// tenant from their membership; everything else.
	r.Group(func(r chi.Router) {
		r.Use(httpx.TimeWrites(s.writeTimeout))
		s.console.Routes(r)
	})
	// Any other URL: a styled page inside the console, JSON under /api/.
	r.NotFound(s.console.NotFound().ServeHTTP)
	r.MethodNotAllowed(methodNotAllowed(r))
	return r
}

// methodNotAllowed answers a known URL asked with another method: 405 with
// the methods it takes in Allow, and under /api/ the API's {"error"} body,
// as the tenant and admin APIs answer theirs.
func methodNotAllowed(router chi.Routes) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range methods {
			if router.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		if strings.HasPrefix(r.URL.Path, "/api/") {
			httpx.WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// tenantAPI mounts the JSON API of a tenant on r. Writes it starts stop
// at the write timeout.
func (s *Server) tenantAPI(r chi.Router) {
	r.With(httpx.TimeWrites(s.writeTimeout)).Route("/api/v1/tenants/{tenant}", s.api.Routes)
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
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ping(r.Context()); err != nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, "database unreachable")
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
