package web

import (
	"context"
	"net/http"
	"time"

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
	p := views.OverviewPage{Overview: ov, UpdatedAt: now, Queue: s.overviewQueue(ctx, t.ID, now)}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		s.render(w, r, http.StatusOK, views.OverviewLive(views.Layout{Tenant: t}, p))
		return
	}
	s.render(w, r, http.StatusOK, views.OverviewView(s.layout(r, "Overview", "overview"), p))
}

// overviewQueue reads what waits for the tenant in queued mode; nil in
// synchronous mode. A queue that does not answer within a second is shown
// as unreachable rather than holding the page.
func (s *Server) overviewQueue(ctx context.Context, tenantID int64, now time.Time) *views.OverviewQueue {
	if s.queue == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := s.queue.State(ctx, tenantID)
	if err != nil {
		s.log.Warn("delivery queue state", "err", err)
		return &views.OverviewQueue{Unreachable: true}
	}
	q := &views.OverviewQueue{Depth: st.Depth}
	if !st.Oldest.IsZero() {
		q.OldestAge = now.Sub(st.Oldest)
	}
	return q
}
