package backfill

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
)

// JobStore is what running jobs and sweeps needs from storage.
type JobStore interface {
	pull.JobStore
	pull.JobRunnerStore
}

// heartbeatEvery is how often a running job reports, progress or not, so
// that no other node takes it over while it waits (on a provider's
// Retry-After, say); well within pull.StaleAfter.
const heartbeatEvery = 30 * time.Second

// reportEvery is the least time between two progress reports of a job.
const reportEvery = 2 * time.Second

// Jobs runs the queued backfill jobs of every tenant, one at a time on a
// node, and queues the sweeps that are due.
type Jobs struct {
	Store  JobStore
	Runner *Runner // its Progress is the job's
	Log    *slog.Logger
}

// RunNext claims the oldest queued job and runs it to its end; false when
// none was queued.
func (j *Jobs) RunNext(ctx context.Context) (bool, error) {
	job, ok, err := j.Store.ClaimBackfill(ctx)
	if err != nil || !ok {
		return false, err
	}
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		progress  = pull.Progress{Outcomes: map[string]int{}}
		stopped   bool // the job was asked to stop
		lastSaved time.Time
	)
	save := func() {
		mu.Lock()
		p := progress
		mu.Unlock()
		stop, err := j.Store.ReportBackfill(context.WithoutCancel(ctx), job.TenantID, job.ID, p)
		if err != nil {
			j.Log.Warn("backfill job: could not report progress", "job", job.ID, "err", err)
			return
		}
		if stop {
			mu.Lock()
			stopped = true
			mu.Unlock()
			cancel()
		}
	}
	r := *j.Runner
	r.Progress = func(rep Report) {
		mu.Lock()
		progress = progressOf(rep)
		due := time.Since(lastSaved) >= reportEvery
		if due {
			lastSaved = time.Now()
		}
		mu.Unlock()
		if due {
			save()
		}
	}
	beats := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-beats:
				return
			case <-t.C:
				save()
			}
		}
	})
	rep, err := r.Run(jctx, Pass{Tenant: job.TenantSlug, Provider: job.Provider, From: job.From, To: job.To, ObjectType: job.ObjectType})
	close(beats)
	wg.Wait()
	mu.Lock()
	cancelled := stopped
	mu.Unlock()
	state, reason := pull.Done, ""
	switch {
	case cancelled:
		state = pull.Cancelled
	case ctx.Err() != nil:
		// The node is stopping: another takes the job over once stale.
		return true, ctx.Err()
	case err != nil:
		state, reason = pull.Failed, err.Error()
	}
	if err := j.Store.FinishBackfill(context.WithoutCancel(ctx), job.TenantID, job.ID, progressOf(rep), state, reason); err != nil {
		return true, err
	}
	level := slog.LevelInfo
	if state == pull.Failed {
		level = slog.LevelWarn
	}
	j.Log.Log(ctx, level, "backfill job ended", "job", job.ID, "tenant", job.TenantSlug, "provider", job.Provider,
		"sweep", job.Sweep, "state", state, "events", rep.Events, "missed", rep.Missed(), "reason", reason)
	return true, nil
}

// progressOf is what a job stores of a report.
func progressOf(rep Report) pull.Progress {
	p := pull.Progress{Deliveries: rep.Deliveries, Events: rep.Events, Missed: rep.Missed(), Outcomes: map[string]int{}}
	for o, n := range rep.Outcomes {
		p.Outcomes[string(o)] = n
	}
	return p
}

// Sweep queues a sweep of every provider with API credentials whose last
// one started more than every ago, over the time since it plus overlap,
// and returns how many it queued.
func (j *Jobs) Sweep(ctx context.Context, now time.Time, every, overlap time.Duration) (int, error) {
	due, err := j.Store.SweepsDue(ctx, now, every, overlap)
	if err != nil {
		return 0, err
	}
	queued := 0
	var errs []error
	for _, d := range due {
		_, err := j.Store.StartBackfill(ctx, d.TenantID, d.ProviderID, d.From, now, "", true)
		if domain.ErrorCode(err) == domain.ECONFLICT {
			continue // another node queued it a moment ago: one sweep per provider
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		queued++
	}
	return queued, errors.Join(errs...)
}
