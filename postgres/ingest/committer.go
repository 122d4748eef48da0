package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/inorder"
	"github.com/tidemark/tidemark/internal/tracing"
	"github.com/tidemark/tidemark/postgres/internal/pg"
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
// Tenants are spread over a few lanes (lanes.go), each with at most one
// committer per process, and a group holds the deliveries of every tenant
// waiting in its lane, so that many sparse tenants share transactions as
// one busy tenant does. Each tenant keeps its own queue, served in arrival
// order: the events of one record keep the order they arrived in. The
// lane takes one delivery of each waiting tenant in turn, so a tenant that
// floods gets its share of a group and no more, and a tenant arriving
// behind it waits for at most the group in flight. Deliveries are grouped
// as they come, so the guard, conflict and lead statements of each see
// exactly what the deliveries before it in the group did, as if they had
// been written one at a time.
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
	lane    int64         // the key of its lane (lanes.go)
	link    *inorder.Link // a queue worker's chain (internal/inorder), or nil
	state   atomic.Int32  // jobQueued, then jobWriting or jobAbandoned
}

// A job's state decides, once, whether its group writes it or its sender
// stopped waiting first: a sender is never answered 503 for a delivery
// that its group then commits.
const (
	jobQueued int32 = iota
	jobWriting
	jobAbandoned
)

// commitGrouped writes a delivery in its lane's next group and waits for
// it.
func (w *Writer) commitGrouped(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	lane := w.laneOf(p.TenantID)
	job := &ingestJob{ctx: ctx, d: d, p: p, events: events, done: make(chan error, 1), link: inorder.From(ctx), lane: lane}
	if job.link != nil {
		if err := job.link.WaitTurn(ctx); err != nil {
			return nil, err
		}
	}
	_, job.wait = tracing.Start(ctx, "queue wait")
	q := &w.groups
	q.mu.Lock()
	if q.draining {
		q.mu.Unlock()
		return nil, domain.Errorf(domain.EUNAVAILABLE, "this node is shutting down")
	}
	queue := q.pending[p.TenantID]
	deadline, hasDeadline := ctx.Deadline()
	if err := w.admit(q, queue, len(events), deadline, hasDeadline); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	if q.enqueue(job) {
		go w.commitLane(lane)
	}
	q.mu.Unlock()
	if job.link != nil {
		job.link.MarkQueued()
	}
	select {
	case err := <-job.done:
		return job.results, err
	case <-ctx.Done():
		if job.state.CompareAndSwap(jobQueued, jobAbandoned) {
			return nil, ctx.Err() // no group will write it
		}
		// Its group is writing it: the answer is that group's, bounded
		// by the group's deadline (groupDeadline, bounds.go).
		err := <-job.done
		return job.results, err
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
		// A lane exists while its committer runs; a tenant is parked
		// while a failed group's deliveries are written alone.
		busy := len(q.lanes) + len(q.parked)
		q.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ingest lanes still writing: %d: %w", busy, ctx.Err())
		case <-time.After(drainPoll):
		}
	}
}

// commitLane writes a lane's queued deliveries, a group at a time, until
// none is left.
func (w *Writer) commitLane(lane int64) {
	q := &w.groups
	for {
		q.mu.Lock()
		group := q.takeGroup(lane)
		q.mu.Unlock()
		if len(group) == 0 {
			return
		}
		w.commitGroup(group)
	}
}

// commitGroup writes a group in one transaction, or, if that fails, each
// of its deliveries alone.
func (w *Writer) commitGroup(group []*ingestJob) {
	live := group[:0]
	for _, job := range group {
		if job.wait != nil {
			job.wait.End()
		}
		if err := job.ctx.Err(); err != nil || !job.state.CompareAndSwap(jobQueued, jobWriting) {
			job.finish(job.ctx.Err()) // its sender gave up waiting: nothing written
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
	acquire, send, cancel, statement := boundedWrite(groupDeadline(live))
	defer cancel()
	spans := startGroupSpans(live)
	batch := &pgx.Batch{}
	// Each round of the group counts its outcomes in the next counter
	// shard, so that few counter rows are updated twice in one transaction
	// (each update would walk the chain of the row's earlier versions).
	rounds := w.queueGroup(batch, live, rand.IntN(w.counterShards), bounds{lockWait: w.groupLockWait(), statement: statement})
	if w.beforeCommitSQL != "" {
		batch.Queue(w.beforeCommitSQL)
	}
	sql := spans.startSQL(batch.Len())
	began := time.Now()
	err := sendBounded(acquire, send, w.pool, batch)
	endBatchSpan(sql, err)
	spans.end(len(live), rounds, err)
	if err == nil || (len(live) == 1 && !pg.LockNotAvailable(err)) {
		if err == nil {
			GroupSize.Observe(float64(len(live)))
			w.groups.measured(groupEvents(live), time.Since(began))
		}
		for _, job := range live {
			job.finish(err)
		}
		return
	}
	w.writeAloneAside(live)
}

// writeAloneAside writes each delivery of a failed group alone, each
// tenant's in arrival order on a goroutine of its own, while the lane
// goes on with its other tenants: a tenant whose delivery fails again, or
// waits on a lock, delays only itself. Its further deliveries wait in its
// queue, passed over by the lane (parked), until these are written.
func (w *Writer) writeAloneAside(group []*ingestJob) {
	var tenants []int64
	byTenant := map[int64][]*ingestJob{}
	for _, job := range group {
		t := job.p.TenantID
		if byTenant[t] == nil {
			tenants = append(tenants, t)
		}
		byTenant[t] = append(byTenant[t], job)
	}
	w.groups.park(tenants)
	for _, t := range tenants {
		go func(jobs []*ingestJob) {
			for _, job := range jobs {
				if !job.chainAllows(nil) {
					job.finish(errEarlierNotWritten)
					continue
				}
				var err error
				job.results, err = w.commit(job.ctx, alone, job.d, job.p, job.events, nil)
				job.finish(err)
			}
			if w.groups.unpark(jobs[0].lane, jobs[0].p.TenantID) {
				go w.commitLane(jobs[0].lane)
			}
		}(byTenant[t])
	}
}

// defaultLaneLockWait bounds each lock wait of a lane's group: a group
// waits on a row lock another transaction holds (another node writing the
// same record, a repair) for the other tenants of its lane too, so past
// this it gives up and its deliveries are written alone, aside
// (writeAloneAside), where they wait as long as they must. Long enough for
// another node's group on the same records to commit, as such waits are.
const defaultLaneLockWait = 250 * time.Millisecond

// groupLockWait is the bound of a group's lock waits: none on Citus,
// where each tenant is a lane of its own (lanes.go) and delays no other.
func (w *Writer) groupLockWait() time.Duration {
	if w.onCitus() {
		return 0
	}
	return w.laneLockWait
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

// groupDeadline is a group's deadline: the latest among its deliveries',
// so that one sender giving up does not roll back the others; none when
// one of them has none.
func groupDeadline(group []*ingestJob) (latest time.Time, has bool) {
	for _, job := range group {
		dl, ok := job.ctx.Deadline()
		if !ok {
			return time.Time{}, false
		}
		if dl.After(latest) {
			latest = dl
		}
	}
	return latest, true
}
