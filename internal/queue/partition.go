package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain"
)

// Bounds of what a worker holds of one partition.
const (
	// maxInFlight is how many of a partition's messages its owner holds
	// unacknowledged (the consumer's MaxAckPending).
	maxInFlight = 256
	// maxHeldBytes bounds their size: no fetch is sent while the messages
	// held take more.
	maxHeldBytes = 4 << 20
	// maxFetchBytes bounds one fetch.
	maxFetchBytes = 1 << 20
)

// consume takes partition p's lease whenever this worker may, and consumes
// the partition while it holds it, until ctx ends.
func (q *Queue) consume(ctx context.Context, p int, o *owner, store domain.QueueStore, stats *WorkerStats) {
	for ctx.Err() == nil {
		if o.take(ctx, p) {
			q.own(ctx, p, o, store, stats)
			o.release(ctx, p)
			continue
		}
		sleep(ctx, shareEvery)
	}
}

// own consumes partition p, whose lease this worker took, until it loses
// the lease, holds more than its share, or ctx ends; then it finishes the
// messages it holds.
func (q *Queue) own(ctx context.Context, p int, o *owner, store domain.QueueStore, stats *WorkerStats) {
	cons, err := q.js.CreateOrUpdateConsumer(ctx, q.cfg.Stream, q.consumerConfig(p))
	var stream jetstream.Stream
	if err == nil {
		stream, err = q.js.Stream(ctx, q.cfg.Stream)
	}
	if err != nil {
		if ctx.Err() == nil {
			q.log.Warn("delivery queue consumer not ready", "partition", p, "err", err)
			sleep(ctx, time.Second)
		}
		return
	}
	if !q.quiet(ctx, cons) {
		return
	}
	part := &ownedPartition{q: q, stream: stream, store: store, stats: stats, tenants: map[int64]*pipeline{}, held: map[uint64]jetstream.Msg{}}
	stopBeats := part.heartbeat()
	defer func() {
		part.stop()
		stopBeats()
	}()
	for ctx.Err() == nil && o.holds(ctx, p) && !o.surplus(ctx, p) {
		if part.heldBytes.Load() > maxHeldBytes {
			sleep(ctx, 5*time.Millisecond)
			continue
		}
		batch, err := cons.Fetch(maxInFlight, jetstream.FetchMaxWait(fetchWait), jetstream.FetchMaxBytes(maxFetchBytes))
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("delivery queue consumer", "partition", p, "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		for msg := range batch.Messages() {
			part.route(ctx, msg)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
			q.log.Warn("delivery queue consumer", "partition", p, "err", err)
			sleep(ctx, time.Second)
		}
	}
}

// quiet waits, after a lease was taken, until the worker that held it can
// no longer fetch, and its messages in flight were acknowledged or can be
// delivered again (ackWait): the new owner then never applies a tenant's
// delivery ahead of an earlier one still held by the old.
func (q *Queue) quiet(ctx context.Context, cons jetstream.Consumer) bool {
	sleep(ctx, quietAfterTake)
	deadline := time.Now().Add(ackWait)
	for ctx.Err() == nil {
		info, err := cons.Info(ctx)
		if (err == nil && info.NumAckPending == 0 && info.NumWaiting == 0) || time.Now().After(deadline) {
			return true
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return false
}

// ownedPartition is what a worker holds of one partition it owns: a pipeline
// per tenant, and the messages unacknowledged.
type ownedPartition struct {
	q      *Queue
	stream jetstream.Stream
	store  domain.QueueStore
	stats  *WorkerStats

	tenants map[int64]*pipeline
	wg      sync.WaitGroup

	mu        sync.Mutex
	held      map[uint64]jetstream.Msg // by stream sequence
	heldBytes atomic.Int64
}

// route opens msg and hands it to its tenant's pipeline, in stream order.
func (part *ownedPartition) route(ctx context.Context, msg jetstream.Msg) {
	m, ok := part.q.open(ctx, msg, part.stats)
	if !ok {
		return
	}
	part.mu.Lock()
	part.held[m.seq] = msg
	part.mu.Unlock()
	part.heldBytes.Add(int64(len(msg.Data())))
	t := m.qd.Delivery.TenantID
	pl := part.tenants[t]
	if pl == nil {
		pl = &pipeline{part: part, in: make(chan *opened, maxInFlight), fresh: true}
		part.tenants[t] = pl
		part.wg.Go(func() { pl.run(ctx) })
	}
	pl.in <- m // rarely waits: a partition holds at most maxInFlight
}

// settled forgets a message acknowledged, refused or left.
func (part *ownedPartition) settled(m *opened) {
	part.mu.Lock()
	delete(part.held, m.seq)
	part.mu.Unlock()
	part.heldBytes.Add(-int64(len(m.msg.Data())))
}

// stop lets every pipeline finish what it holds.
func (part *ownedPartition) stop() {
	for _, pl := range part.tenants {
		close(pl.in)
	}
	part.wg.Wait()
}

// heartbeat tells JetStream, every third of ackWait, that the messages held
// are in progress, so that none is delivered again while it waits its turn.
func (part *ownedPartition) heartbeat() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			part.mu.Lock()
			for _, msg := range part.held {
				msg.InProgress()
			}
			part.mu.Unlock()
		}
	})
	return func() { close(done); wg.Wait() }
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
