package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/inorder"
	"github.com/tidemark/tidemark/internal/tracing"
)

// Group commit. Deliveries that arrive while a group is being written wait
// for the next one, and every group is one pipelined batch: one
// transaction, one round trip and one WAL flush for all of its deliveries.
// Each delivery is answered only after its group committed.
//
// The committer never waits for company: a delivery arriving when no group
// is in flight is written at once, alone, so light load gets no added
// latency. Groups form only when deliveries already queue.
//
// Each tenant has its own queue and at most one committer per process,
// writing its groups in arrival order: the events of one record keep the
// order they arrived in, and the groups of one process never wait on each
// other's row locks (tenants share no rows). A tenant whose group waits on
// a lock, or floods, delays only itself: the other tenants' committers go
// on. Deliveries are grouped as they come, so the guard, conflict and lead
// statements of each see exactly what the deliveries before it in the
// group did, as if they had been written one at a time.
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
// stuck on a lock (admission.go).
const defaultMaxQueued = 1024

// GroupSize observes how many deliveries each committed group held;
// serve exposes it on /metrics as tidemark_ingest_group_size.
var GroupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "tidemark_ingest_group_size",
	Help:    "Deliveries written by one ingest transaction (group commit).",
	Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
})

// ingestJob is one delivery waiting for its group.
type ingestJob struct {
	ctx     context.Context
	d       domain.Delivery
	p       domain.ProviderEndpoint
	events  []domain.Event
	results []domain.Result
	done    chan error    // buffered: the committer never blocks on it
	wait    trace.Span    // "queue wait", until the committer takes its group
	link    *inorder.Link // a queue worker's chain (internal/inorder), or nil
}

// groupQueues holds, per tenant, the deliveries waiting for its committer.
// A tenant's queue exists while its committer runs.
type groupQueues struct {
	mu      sync.Mutex
	pending map[int64][]*ingestJob
	// samples are the recent groups' paces (admission.go).
	samples []paceSample
	// draining refuses new deliveries while Drain waits for the
	// committers to finish the ones they hold.
	draining bool
}

// commitGrouped writes a delivery in its tenant's next group and waits for
// it.
func (w *Writer) commitGrouped(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	job := &ingestJob{ctx: ctx, d: d, p: p, events: events, done: make(chan error, 1), link: inorder.From(ctx)}
	if job.link != nil {
		if err := job.link.WaitTurn(ctx); err != nil {
			return nil, err
		}
	}
	_, job.wait = tracing.Start(ctx, "queue wait")
	q := &w.groups
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[int64][]*ingestJob{}
	}
	if q.draining {
		q.mu.Unlock()
		return nil, domain.Errorf(domain.EUNAVAILABLE, "this node is shutting down")
	}
	queue, running := q.pending[p.TenantID]
	deadline, hasDeadline := ctx.Deadline()
	if err := w.admit(q, queue, len(events), deadline, hasDeadline); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	q.pending[p.TenantID] = append(queue, job)
	if !running {
		go w.commitGroups(p.TenantID)
	}
	q.mu.Unlock()
	if job.link != nil {
		job.link.MarkQueued()
	}
	select {
	case err := <-job.done:
		return job.results, err
	case <-ctx.Done():
		// The group may still commit this delivery; unanswered, the
		// provider retries it and the retry is a duplicate.
		return nil, ctx.Err()
	}
}

// drainPoll is how often Drain looks whether the committers are done.
const drainPoll = 5 * time.Millisecond

// Drain refuses new deliveries and waits until every committer has written
// the deliveries it holds, including those whose senders stopped waiting:
// a node shutting down closes its pools only after that. It returns
// ctx's error if ctx ends first.
func (w *Writer) Drain(ctx context.Context) error {
	q := &w.groups
	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	for {
		q.mu.Lock()
		// A tenant's queue exists while its committer runs.
		busy := len(q.pending)
		q.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d tenants' committers still writing: %w", busy, ctx.Err())
		case <-time.After(drainPoll):
		}
	}
}

// commitGroups writes a tenant's queued deliveries, a group at a time,
// until none is left.
func (w *Writer) commitGroups(tenantID int64) {
	q := &w.groups
	for {
		q.mu.Lock()
		queue := q.pending[tenantID]
		group := takeGroup(&queue)
		if len(group) == 0 {
			delete(q.pending, tenantID)
			q.mu.Unlock()
			return
		}
		q.pending[tenantID] = queue
		q.mu.Unlock()
		w.commitGroup(group)
	}
}

// takeGroup removes the next group from the front of pending: at least one
// delivery, then as many as fit the bounds, in arrival order.
func takeGroup(pending *[]*ingestJob) []*ingestJob {
	n, events := 0, 0
	for _, job := range *pending {
		if n > 0 && (n == maxGroupDeliveries || events+len(job.events) > maxGroupEvents) {
			break
		}
		n++
		events += len(job.events)
	}
	group := (*pending)[:n:n]
	*pending = (*pending)[n:]
	return group
}

// commitGroup writes a group in one transaction, or, if that fails, each
// of its deliveries alone.
func (w *Writer) commitGroup(group []*ingestJob) {
	live := group[:0]
	for _, job := range group {
		if job.wait != nil {
			job.wait.End()
		}
		if err := job.ctx.Err(); err != nil {
			job.finish(err) // its sender gave up waiting: nothing written
			continue
		}
		if !job.chainAllows(live) {
			job.finish(errEarlierNotWritten)
			continue
		}
		live = append(live, job)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := groupContext(live)
	defer cancel()
	spans := startGroupSpans(live)
	batch := &pgx.Batch{}
	// Each round of the group counts its outcomes in the next counter
	// shard, so that few counter rows are updated twice in one transaction
	// (each update would walk the chain of the row's earlier versions).
	rounds := w.queueGroup(batch, live, rand.IntN(w.counterShards))
	if w.beforeCommitSQL != "" {
		batch.Queue(w.beforeCommitSQL)
	}
	sql := spans.startSQL(batch.Len())
	began := time.Now()
	err := w.pool.SendBatch(ctx, batch).Close()
	endBatchSpan(sql, err)
	spans.end(len(live), rounds, err)
	if err == nil || len(live) == 1 {
		if err == nil {
			GroupSize.Observe(float64(len(live)))
			w.groups.measured(groupEvents(live), time.Since(began))
		}
		for _, job := range live {
			job.finish(err)
		}
		return
	}
	for _, job := range live {
		if !job.chainAllows(nil) {
			job.finish(errEarlierNotWritten)
			continue
		}
		job.results, err = w.commit(job.ctx, alone, job.d, job.p, job.events, nil)
		job.finish(err)
	}
}

// errEarlierNotWritten fails a delivery of a queue worker's chain whose
// predecessor was not written: the worker writes it again after that one.
var errEarlierNotWritten = domain.Errorf(domain.EUNAVAILABLE, "an earlier delivery of this tenant was not written yet")

// chainAllows reports whether the delivery may be written: it has no
// chain, or the delivery before it in its chain committed or is written
// ahead of it in the same transaction (one of group).
func (job *ingestJob) chainAllows(group []*ingestJob) bool {
	if job.link == nil {
		return true
	}
	before := job.link.Before()
	if before == nil || before.Committed() {
		return true
	}
	for _, other := range group {
		if other.link == before {
			return true
		}
	}
	return false
}

// finish answers the delivery's sender and settles its link.
func (job *ingestJob) finish(err error) {
	if job.link != nil {
		job.link.Settle(err)
	}
	job.done <- err
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
