package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/views"
)

// overviewRoutes registers the console pages of the overview.
func (s *Server) overviewRoutes(r chi.Router) {
	r.Get("/", s.handleOverview)
}

// handleOverview shows the tenant's counts, chart and latest deliveries.
// htmx polls the same URL and gets the live section alone, so a poll
// neither re-renders the page frame nor takes the pending flash.
func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	now := s.now()
	ov, err := s.stats.Overview(ctx, t.ID, now)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	p := views.OverviewPage{Overview: ov, UpdatedAt: now}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		s.render(w, r, http.StatusOK, views.OverviewLive(views.Layout{Tenant: t}, p))
		return
	}
	s.render(w, r, http.StatusOK, views.OverviewView(s.layout(r, "Overview", "overview"), p))
}
