package postgres

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxRunningGroups is how many groups of one tenant a process writes at
// once.
const maxRunningGroups = 2

// committer writes the groups of one tenant in one process.
//
// It starts them in arrival order, each as soon as fewer than
// maxRunningGroups are running and it shares no idempotency key, record or
// lead with a running group. Two groups that share nothing cannot see or
// wait for anything the other writes, so they run side by side on two
// connections, and every outcome is what it would be had one been written
// after the other. A group that shares something waits, with everything
// queued behind it, until the groups it shares with have committed, so
// that it sees their writes as if written after them. The counter rows two
// running groups update are told apart by their shards (see shard), so
// nothing makes them wait for each other: they cannot deadlock.
type committer struct {
	s        *Store
	tenantID int64
	// shard is the counter shard of the next group's first round; each
	// group takes the shards after its predecessor's, so that the groups
	// running together do not update one counter row.
	shard    int
	running  []*runningGroup // oldest first
	finished chan struct{}   // signalled (buffered, 1) when a group ends

	mu       sync.Mutex
	lastDone time.Time // when its latest group committed
}

// runningGroup is a group whose transaction is under way.
type runningGroup struct {
	names map[string]int // what its events share (roundEvent.names)
	done  chan struct{}  // closed once it committed or failed
}

func (s *Store) newCommitter(tenantID int64) *committer {
	return &committer{s: s, tenantID: tenantID, shard: rand.IntN(s.counterShards), finished: make(chan struct{}, 1)}
}

// commitGroups writes a tenant's queued deliveries, in groups, until none
// is left and none is running.
func (s *Store) commitGroups(tenantID int64, tq *tenantQueue) {
	q := &s.groups
	c := s.newCommitter(tenantID)
	for {
		c.prune()
		q.mu.Lock()
		group := nextGroup(tq.jobs)
		if len(group) == 0 && len(c.running) == 0 {
			delete(q.pending, tenantID)
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		switch {
		case len(group) > 0 && c.mayStart(group):
			q.mu.Lock()
			tq.jobs = tq.jobs[len(group):]
			q.mu.Unlock()
			c.start(group)
		case len(group) > 0:
			<-c.finished
		default:
			select {
			case <-c.finished:
			case <-tq.arrived:
			}
		}
	}
}

// nextGroup is the next group at the front of pending: at least one
// delivery, then as many as fit the bounds, in arrival order.
func nextGroup(pending []*ingestJob) []*ingestJob {
	n, events := 0, 0
	for _, job := range pending {
		if n > 0 && (n == maxGroupDeliveries || events+len(job.events) > maxGroupEvents) {
			break
		}
		n++
		events += len(job.events)
	}
	return pending[:n:n]
}

// prune forgets the groups that ended.
func (c *committer) prune() {
	running := c.running[:0]
	for _, g := range c.running {
		select {
		case <-g.done:
		default:
			running = append(running, g)
		}
	}
	clear(c.running[len(running):])
	c.running = running
}

// mayStart reports whether group can start now.
func (c *committer) mayStart(group []*ingestJob) bool {
	if len(c.running) >= maxRunningGroups {
		return false
	}
	for _, job := range group {
		for _, ev := range job.roundEvents() {
			for _, name := range ev.names {
				for _, g := range c.running {
					if _, shared := g.names[name]; shared {
						return false
					}
				}
			}
		}
	}
	return true
}

// start writes group in the background, in one transaction, or, if that
// fails, each of its deliveries alone.
func (c *committer) start(group []*ingestJob) {
	live := group[:0]
	for _, job := range group {
		if err := job.ctx.Err(); err != nil {
			job.done <- err // its sender gave up waiting: nothing written
			continue
		}
		live = append(live, job)
	}
	if len(live) == 0 {
		return
	}
	batch := &pgx.Batch{}
	rounds, names := c.s.queueGroup(batch, live, c.shard)
	c.shard = (c.shard + rounds) % c.s.counterShards
	if c.s.beforeCommitSQL != "" {
		batch.Queue(c.s.beforeCommitSQL)
	}
	g := &runningGroup{names: names, done: make(chan struct{})}
	c.running = append(c.running, g)
	go func() {
		defer signal(c.finished)
		defer close(g.done)
		c.write(live, batch)
	}()
}

// write sends a group's batch and answers its deliveries.
func (c *committer) write(live []*ingestJob, batch *pgx.Batch) {
	ctx, cancel := groupContext(live)
	defer cancel()
	began := time.Now()
	err := c.s.pool.SendBatch(ctx, batch).Close()
	if err == nil || len(live) == 1 {
		if err == nil {
			GroupSize.Observe(float64(len(live)))
			c.measured(groupEvents(live), began)
		}
		for _, job := range live {
			job.done <- err
		}
		return
	}
	for _, job := range live {
		job.results, err = c.s.ingestAlone(job.ctx, job.d, job.p, job.events)
		job.done <- err
	}
}

// measured folds a group that began at began and just committed into the
// pace, counting the time since it began or since the committer's
// previous group committed, whichever is later: two groups that ran side
// by side count their time once.
func (c *committer) measured(events int, began time.Time) {
	now := time.Now()
	c.mu.Lock()
	from := began
	if c.lastDone.After(from) {
		from = c.lastDone
	}
	c.lastDone = now
	c.mu.Unlock()
	c.s.groups.measured(events, now.Sub(from))
}

// signal wakes whoever waits on ch (buffered, 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
