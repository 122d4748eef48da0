package backfill

import (
	"context"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/domain"
	domainalerting "github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/internal/supervisor"
)

// Backfill jobs and sweeps (docs/contract/backfill.md).
const (
	// backfillPoll is how often a node looks for a queued backfill job.
	backfillPoll = 5 * time.Second
	// sweepCheck is how often a node looks for providers whose sweep is due.
	sweepCheck = time.Minute
	// sweepOverlap is how far back of the previous sweep's end a sweep
	// starts, so that a change committed at the provider a little after it
	// was stamped is not missed.
	sweepOverlap = 5 * time.Minute
	// DefaultSweepInterval is serve's --sweep-interval.
	DefaultSweepInterval = 15 * time.Minute
)

// NodeStore is what a serve node's backfills need from storage.
type NodeStore interface {
	Store
	JobStore
	FieldStore
	// ProviderSummary finds a provider of the tenant by name.
	ProviderSummary(ctx context.Context, tenantID int64, name string) (domain.ProviderSummary, error)
}

// NewJobs is the backfill runner of a node.
func NewJobs(store NodeStore, log *slog.Logger) *Jobs {
	return &Jobs{Store: store, Log: log, Runner: &Runner{Store: store, Sources: NewSources(store, log), Log: log}}
}

// Service runs the queued backfill jobs of every tenant, a slice of one at
// a time on each node, tenants taking turns, and every sweepCheck queues
// the sweeps that are due (every is --sweep-interval; 0 sweeps never).
// Every node runs it: a job is claimed by one node, and a provider has at
// most one sweep queued.
func Service(jobs *Jobs, every time.Duration, log *slog.Logger) supervisor.Service {
	var checked time.Time
	return supervisor.Every("backfill", backfillPoll, func(ctx context.Context) time.Duration {
		if every > 0 && time.Since(checked) >= sweepCheck {
			checked = time.Now()
			n, err := jobs.Sweep(ctx, time.Now(), every, sweepOverlap)
			if err != nil && ctx.Err() == nil {
				log.Warn("backfill: could not queue the sweeps due", "err", err)
			} else if n > 0 {
				log.Info("backfill: sweeps queued", "providers", n)
			}
		}
		for ctx.Err() == nil {
			ran, err := jobs.RunNext(ctx)
			if err != nil && ctx.Err() == nil {
				log.Error("backfill job", "err", err)
			}
			if !ran || err != nil {
				break
			}
		}
		return backfillPoll
	})
}

// SweepWhenSilent queues a sweep of a provider whose provider_silent alert
// fired, over the silent time and the overlap, when it has API
// credentials.
func SweepWhenSilent(store NodeStore, log *slog.Logger) func(context.Context, domainalerting.Change) {
	return func(ctx context.Context, c domainalerting.Change) {
		if c.Alert.Rule != domainalerting.ProviderSilent || c.Alert.Provider == "" {
			return
		}
		p, err := store.ProviderSummary(ctx, c.TenantID, c.Alert.Provider)
		if err != nil {
			log.Warn("backfill: no sweep for a silent provider", "provider", c.Alert.Provider, "err", err)
			return
		}
		if _, ok, err := store.APICredentials(ctx, c.TenantID, p.ID); err != nil || !ok {
			return
		}
		from := c.Alert.StartedAt.Add(-c.Alert.Window - sweepOverlap)
		if _, err := store.StartBackfill(ctx, c.TenantID, p.ID, from, time.Now(), "", true); err != nil {
			log.Warn("backfill: could not queue the sweep of a silent provider", "provider", c.Alert.Provider, "err", err)
		}
	}
}
