package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// A job runs in slices of at most DefaultSlice, then goes back to the
// queue; past DefaultMax over all its slices it fails
// (docs/contract/backfill.md#jobs-run-in-slices).
var (
	DefaultSlice = Budget{Pages: 100, Time: time.Minute}
	DefaultMax   = Budget{Pages: 20000, Time: 4 * time.Hour}
)

// Jobs runs the queued backfill jobs of every tenant, a slice of one at a
// time on a node, and queues the sweeps that are due.
type Jobs struct {
	Store  JobStore
	Runner *Runner // its Progress is the job's
	Log    *slog.Logger
	// Slice and Max bound a slice and a job; DefaultSlice and DefaultMax
	// when zero.
	Slice, Max Budget
}

// RunNext claims a queued job (ClaimBackfill's turn) and runs a slice of
// it: to its end, or back to the queue once it used the slice; false when
// none was queued.
func (j *Jobs) RunNext(ctx context.Context) (bool, error) {
	job, ok, err := j.Store.ClaimBackfill(ctx)
	if err != nil || !ok {
		return false, err
	}
	began := time.Now()
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		progress  = progressOf(job, Report{}, 0)
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
		progress = progressOf(job, rep, time.Since(began))
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
	slice, most := cmp.Or(j.Slice, DefaultSlice), cmp.Or(j.Max, DefaultMax)
	// The slice ends at the job's total bounds, if they come first (a
	// little past them for a job whose node died past them).
	slice.Pages = max(min(slice.Pages, most.Pages-job.Pages), 1)
	slice.Time = max(min(slice.Time, most.Time-job.RanFor), time.Millisecond)
	rep, err := r.Run(jctx, Pass{Tenant: job.TenantSlug, Provider: job.Provider, From: job.From, To: job.To,
		ObjectType: job.ObjectType, At: job.At, Budget: slice})
	close(beats)
	wg.Wait()
	mu.Lock()
	cancelled := stopped
	mu.Unlock()
	p := progressOf(job, rep, time.Since(began))
	state, reason := pull.Done, ""
	switch {
	case cancelled:
		state = pull.Cancelled
	case ctx.Err() != nil:
		// The node is stopping: another takes the job over once stale.
		return true, ctx.Err()
	case errors.Is(err, ErrSliceSpent):
		if reason = pastBound(p, most); reason == "" {
			j.Log.Debug("backfill job: slice used, queued again", "job", job.ID, "tenant", job.TenantSlug,
				"pages", p.Pages, "object_type", rep.At.ObjectType, "from", rep.At.From, "span", rep.At.Span)
			return true, j.Store.YieldBackfill(context.WithoutCancel(ctx), job.TenantID, job.ID, p, rep.At)
		}
		state = pull.Failed
	case err != nil:
		state, reason = pull.Failed, err.Error()
	}
	if err := j.Store.FinishBackfill(context.WithoutCancel(ctx), job.TenantID, job.ID, p, state, reason); err != nil {
		return true, err
	}
	level := slog.LevelInfo
	if state == pull.Failed {
		level = slog.LevelWarn
	}
	j.Log.Log(ctx, level, "backfill job ended", "job", job.ID, "tenant", job.TenantSlug, "provider", job.Provider,
		"sweep", job.Sweep, "state", state, "events", p.Events, "missed", p.Missed, "pages", p.Pages, "reason", reason)
	return true, nil
}

// pastBound is why a job that used its slice fails: it reached a total
// bound; "" while it is within both.
func pastBound(p pull.Progress, most Budget) string {
	switch {
	case p.Pages >= most.Pages:
		return fmt.Sprintf("stopped after %d pages, the most a backfill job may pull, having written what it read: "+
			"start backfills of shorter windows or of one object type at a time", p.Pages)
	case p.RanFor >= most.Time:
		return fmt.Sprintf("stopped after running for %s, the longest a backfill job may run, having written what it read: "+
			"start backfills of shorter windows or of one object type at a time", most.Time)
	}
	return ""
}

// progressOf is what a job stores after its slice so far, rep, which ran
// for ran: its earlier slices' progress and this one's.
func progressOf(job pull.Job, rep Report, ran time.Duration) pull.Progress {
	p := pull.Progress{Deliveries: job.Deliveries + rep.Deliveries, Events: job.Events + rep.Events,
		Missed: job.Missed + rep.Missed(), Pages: job.Pages + rep.Pages, RanFor: job.RanFor + ran, Outcomes: map[string]int{}}
	for o, n := range job.Outcomes {
		p.Outcomes[o] = n
	}
	for o, n := range rep.Outcomes {
		p.Outcomes[string(o)] += n
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
