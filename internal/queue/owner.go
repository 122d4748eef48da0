package queue

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Leases divide the partitions among the workers: a worker consumes a
// partition only while it holds the partition's lease, so one worker at a
// time takes its messages, in stream order, several in flight. The
// PostgreSQL implementation (postgres/leases) holds them as session
// advisory locks, released when the worker's session ends.
type Leases interface {
	// Take takes partition p's lease if no worker holds it.
	Take(ctx context.Context, p int) (bool, error)
	// Release gives up partition p's lease.
	Release(ctx context.Context, p int) error
	// Workers counts the workers holding a session (this one included).
	Workers(ctx context.Context) (int, error)
	// Holding asks the session whether it is still there and answers the
	// partitions whose leases it holds: none once it ended (Take then
	// starts another).
	Holding(ctx context.Context) ([]int, error)
	// Close ends the session, releasing every lease.
	Close()
}

// Timing of the leases.
const (
	// aliveEvery is the longest a worker trusts its session without asking:
	// it asks before a fetch when its last answer is older.
	aliveEvery = 250 * time.Millisecond
	// fetchWait is the longest one fetch request waits for messages.
	fetchWait = time.Second
	// quietAfterTake is how long a worker that took a lease waits before
	// it looks whether the partition is quiet: the worker that lost it may
	// have sent one last fetch on its last good answer from aliveEvery,
	// which reaches the server by then. The new owner then waits until no
	// fetch of another worker is pending and the messages in flight were
	// acknowledged, at most ackWait (a dead worker's messages are then
	// delivered again, first).
	quietAfterTake = aliveEvery + 250*time.Millisecond
	// shareEvery is how often a worker counts the workers, to take or
	// give back partitions so that each holds a fair share.
	shareEvery = 2 * time.Second
)

// owner is a worker's view of the leases it holds.
type owner struct {
	leases Leases
	log    *slog.Logger

	mu        sync.Mutex
	held      map[int]bool
	workers   int
	countedAt time.Time
	aliveAt   time.Time
}

// share is how many partitions this worker should hold: a fair share of
// the workers counted. Called with mu held.
func (o *owner) share(ctx context.Context) int {
	if time.Since(o.countedAt) > shareEvery {
		n, err := o.leases.Workers(ctx)
		if err != nil {
			o.log.Warn("queue worker: could not count the workers", "err", err)
			n = max(o.workers, 1)
		}
		o.workers, o.countedAt = max(n, 1), time.Now()
	}
	return (Partitions + o.workers - 1) / o.workers
}

// take takes partition p's lease when this worker holds less than its
// share and no one holds it.
func (o *owner) take(ctx context.Context, p int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.held) >= o.share(ctx) {
		return false
	}
	ok, err := o.leases.Take(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("queue worker: could not take a partition's lease", "partition", p, "err", err)
		}
		return false
	}
	if ok {
		o.held[p] = true
		o.countedAt = time.Time{} // a new worker's session counts at once
	}
	return ok
}

// surplus reports whether this worker holds more than its share and p is
// the partition to give back: the highest it holds.
func (o *owner) surplus(ctx context.Context, p int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.held) <= o.share(ctx) {
		return false
	}
	for q := range o.held {
		if q > p {
			return false
		}
	}
	return o.held[p]
}

// release gives partition p back.
func (o *owner) release(ctx context.Context, p int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.held[p] {
		return
	}
	delete(o.held, p)
	if err := o.leases.Release(context.WithoutCancel(ctx), p); err != nil {
		o.log.Warn("queue worker: could not release a partition's lease", "partition", p, "err", err)
	}
}

// holds reports whether this worker still holds p's lease, asking the
// database when its last answer is older than aliveEvery. A lost session
// loses every lease.
func (o *owner) holds(ctx context.Context, p int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.held[p] {
		return false
	}
	if time.Since(o.aliveAt) < aliveEvery {
		return true
	}
	held, err := o.leases.Holding(ctx)
	if err != nil && ctx.Err() == nil {
		o.log.Warn("queue worker: its leases were lost with its database session; it takes partitions again", "err", err)
	}
	clear(o.held)
	for _, q := range held {
		o.held[q] = true
	}
	o.aliveAt = time.Now()
	return o.held[p]
}

func (o *owner) close() { o.leases.Close() }
