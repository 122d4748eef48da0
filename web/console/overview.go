package console

import (
	"context"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/views"
)

// handleOverview shows the tenant's counts, chart and latest deliveries.
// htmx polls the same URL and gets the live section alone, so a poll
// neither re-renders the page frame nor takes the pending flash.
func (h overviewPages) handleOverview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	now := h.now()
	ov, err := h.stats.Overview(ctx, t.ID, now)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	p := views.OverviewPage{Overview: ov, UpdatedAt: now, Queue: h.overviewQueue(ctx, t.ID, now)}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		h.render(w, r, http.StatusOK, views.OverviewLive(views.Layout{Tenant: t}, p))
		return
	}
	h.render(w, r, http.StatusOK, views.OverviewView(h.layout(r, "Overview", "overview"), p))
}

// overviewQueue reads what waits for the tenant in queued mode; nil in
// synchronous mode. A queue that does not answer within a second is shown
// as unreachable rather than holding the page.
func (h overviewPages) overviewQueue(ctx context.Context, tenantID int64, now time.Time) *views.OverviewQueue {
	if h.queue == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := h.queue.State(ctx, tenantID)
	if err != nil {
		h.log.Warn("delivery queue state", "err", err)
		return &views.OverviewQueue{Unreachable: true}
	}
	q := &views.OverviewQueue{Depth: st.Depth}
	if !st.Oldest.IsZero() {
		q.OldestAge = now.Sub(st.Oldest)
	}
	return q
}
