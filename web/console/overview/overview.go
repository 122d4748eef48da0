// Package overview is the console's first page of a workspace
// (/t/{tenant}): the outcome counts of one period (?period=24h, 7d or 30d)
// per provider, open conflicts, the chart of the last days and the latest
// deliveries, refreshed by htmx every 10 seconds. It is a page family of
// web/console, which registers its route behind the session and the tenant
// and hands it the page frame through Console.
package overview

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the overview reads.
type Store interface {
	domain.StatsService
	pull.JobStore // each provider's last sweep
}

// Pages serves the overview.
type Pages struct {
	Console shell.Console
	Store   Store
	Queue   domain.DeliveryQueue // nil: synchronous mode
	Log     *slog.Logger
	Now     func() time.Time
}

// Period reads ?period=: the index of its domain.OverviewWindows entry,
// 0 (24 hours) when absent, an EINVALID error when it is none of them.
func Period(r *http.Request) (int, error) {
	v := strings.TrimSpace(r.URL.Query().Get("period"))
	if v == "" {
		return 0, nil
	}
	if i := slices.Index(views.OverviewPeriods, strings.ToLower(v)); i >= 0 {
		return i, nil
	}
	return 0, domain.Errorf(domain.EINVALID, "period %q is not one of %s: choose 24h, 7d or 30d",
		v, strings.Join(views.OverviewPeriods, ", "))
}

// Handle shows the tenant's counts, chart and latest deliveries. htmx
// polls the same URL and gets the live section alone, so a poll neither
// re-renders the page frame nor takes the pending flash.
func (p Pages) Handle(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	period, err := Period(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	t := p.Console.Membership(r).Tenant
	now := p.Now()
	ov, err := p.Store.Overview(ctx, t.ID, now)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v := views.OverviewPage{Overview: ov, UpdatedAt: now, Queue: p.queue(ctx, t.ID, now), Period: period,
		Sweeps: p.sweeps(ctx, t.ID)}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		p.Console.Render(w, r, http.StatusOK, views.OverviewLive(views.Layout{Tenant: t}, v))
		return
	}
	p.Console.Render(w, r, http.StatusOK, views.OverviewView(p.Console.Layout(r, "Overview", "overview"), v))
}

// sweeps reads each provider's last sweep by name; nil, shown as unknown,
// when they cannot be read: the counts matter more than the sweeps.
func (p Pages) sweeps(ctx context.Context, tenantID int64) map[string]pull.Job {
	last, err := p.Store.LastSweeps(ctx, tenantID)
	if err != nil {
		p.Log.WarnContext(ctx, "last sweeps", "err", err)
		return nil
	}
	byName := make(map[string]pull.Job, len(last))
	for _, j := range last {
		byName[j.Provider] = j
	}
	return byName
}

// queue reads what waits for the tenant in queued mode; nil in
// synchronous mode. A queue that does not answer within a second is shown
// as unreachable rather than holding the page.
func (p Pages) queue(ctx context.Context, tenantID int64, now time.Time) *views.OverviewQueue {
	if p.Queue == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := p.Queue.State(ctx, tenantID)
	if err != nil {
		p.Log.WarnContext(ctx, "delivery queue state", "err", err)
		return &views.OverviewQueue{Unreachable: true}
	}
	q := &views.OverviewQueue{Depth: st.Depth}
	if !st.Oldest.IsZero() {
		q.OldestAge = now.Sub(st.Oldest)
	}
	return q
}
