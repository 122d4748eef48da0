package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
)

// Group commit. Deliveries that arrive while groups are being written wait
// for the next one, and every group is one pipelined batch: one
// transaction, one round trip and one WAL flush for all of its deliveries.
// Each delivery is answered only after its group committed.
//
// The committer never waits for company: a delivery arriving when no group
// is in flight is written at once, alone, so light load gets no added
// latency. Groups form only when deliveries already queue.
//
// Each tenant has its own queue and one committer per process, which
// starts its groups in arrival order (committer.go): up to two at once
// when they share no idempotency key, record or lead, else one after the
// other. Deliveries are grouped as they come, so the guard, conflict and
// lead statements of each see exactly what the deliveries before it did,
// as if they had been written one at a time. A tenant whose group waits on
// a lock, or floods, delays only itself: the other tenants' committers go
// on (tenants share no rows).
//
// A group that fails (one delivery's bad data, a lost deadlock with another
// node) rolls back whole; each of its deliveries is then written alone, so
// one delivery's failure is its own.

// Bounds of one group, so that a batch stays a reasonable size.
const (
	maxGroupDeliveries = 128
	maxGroupEvents     = 2000
)

// defaultMaxQueued is how many of one tenant's deliveries may wait for its
// committer in one process; past it a delivery is refused at once (503)
// rather than waiting out its budget behind a tenant that floods or is
// stuck on a lock.
const defaultMaxQueued = 1024

// minQueuedEvents is the fewest events one tenant may have waiting in one
// process: two groups' worth. Past that, a delivery waits only if the
// committer, at the pace it has been writing, would reach it within half of
// what is left of its budget (queuedEventsAllowed); otherwise it is refused
// at once, rather than accepted to time out in the queue while the ones
// before it time out too.
const minQueuedEvents = 2 * maxGroupEvents

// GroupSize observes how many deliveries each committed group held;
// serve exposes it on /metrics as tidemark_ingest_group_size.
var GroupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "tidemark_ingest_group_size",
	Help:    "Deliveries written by one ingest transaction (group commit).",
	Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
})

// ingestJob is one delivery waiting for its group.
type ingestJob struct {
	ctx      context.Context
	d        domain.Delivery
	p        domain.ProviderEndpoint
	events   []domain.Event
	prepared []roundEvent // events, as rounds take them; see roundEvents
	results  []domain.Result
	done     chan error // buffered: the committer never blocks on it
}

// roundEvents are the job's events prepared for rounds, computed once.
func (job *ingestJob) roundEvents() []roundEvent {
	if job.prepared == nil {
		job.prepared = make([]roundEvent, len(job.events))
		for n, e := range job.events {
			job.prepared[n] = prepared(job, n, e)
		}
	}
	return job.prepared
}

// groupQueues holds, per tenant, the deliveries waiting for its committer.
// A tenant's queue exists while its committer runs.
type groupQueues struct {
	mu      sync.Mutex
	pending map[int64]*tenantQueue
	// events and took are the events committed and the time taken, both
	// decayed by a fifth per group, so events/took is how many events per
	// second committers have been writing; 0 until a group is measured.
	events, took float64
}

// tenantQueue is one tenant's deliveries waiting for its committer.
type tenantQueue struct {
	jobs    []*ingestJob
	arrived chan struct{} // signalled (buffered, 1) when a job is added
}

// queuedEventsAllowed is how many events may wait ahead of a delivery that
// must be answered by deadline: what the committer writes, at its recent
// pace, in half of the time left (the other half is for the delivery's own
// group), and never fewer than minQueuedEvents. Called with mu held.
func (q *groupQueues) queuedEventsAllowed(deadline time.Time, ok bool) int {
	if !ok || q.took == 0 {
		return minQueuedEvents
	}
	return max(minQueuedEvents, int(q.events/q.took*time.Until(deadline).Seconds()/2))
}

// measured folds a committed group into the pace: events written in took,
// the time since the group started or since the committer's previous group
// committed, whichever is later.
func (q *groupQueues) measured(events int, took time.Duration) {
	if took <= 0 {
		return
	}
	q.mu.Lock()
	q.events = 0.8*q.events + float64(events)
	q.took = 0.8*q.took + took.Seconds()
	q.mu.Unlock()
}

// ingestGrouped writes a delivery in the next group and waits for it.
func (s *Store) ingestGrouped(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	job := &ingestJob{ctx: ctx, d: d, p: p, events: events, done: make(chan error, 1)}
	q := &s.groups
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[int64]*tenantQueue{}
	}
	tq, running := q.pending[p.TenantID]
	if !running {
		tq = &tenantQueue{arrived: make(chan struct{}, 1)}
		q.pending[p.TenantID] = tq
		go s.commitGroups(p.TenantID, tq)
	}
	queue := tq.jobs
	if len(queue) >= s.maxQueued || (len(queue) > 0 && groupEvents(queue)+len(events) > q.queuedEventsAllowed(ctx.Deadline())) {
		q.mu.Unlock()
		return nil, domain.Errorf(domain.EUNAVAILABLE, "%d deliveries of this tenant are already waiting to be written", len(queue))
	}
	tq.jobs = append(queue, job)
	signal(tq.arrived)
	q.mu.Unlock()
	select {
	case err := <-job.done:
		return job.results, err
	case <-ctx.Done():
		// The group may still commit this delivery; unanswered, the
		// provider retries it and the retry is a duplicate.
		return nil, ctx.Err()
	}
}

func groupEvents(group []*ingestJob) int {
	n := 0
	for _, job := range group {
		n += len(job.events)
	}
	return n
}

// groupContext bounds a group's transaction by the latest deadline among
// its deliveries, and is not cancelled with any one of them: one sender
// giving up must not roll back the others.
func groupContext(group []*ingestJob) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, job := range group {
		if dl, ok := job.ctx.Deadline(); !ok {
			return context.WithCancel(context.Background())
		} else if dl.After(latest) {
			latest = dl
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
