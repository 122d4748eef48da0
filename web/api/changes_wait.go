package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
)

// headPollTimeout bounds one poll of a tenant's head, the wait for a
// connection of the read pool included.
const headPollTimeout = 5 * time.Second

// headWatch wakes the change feed's long polls when their tenant's head
// moves. While any request of a tenant waits, one goroutine of this node
// polls that tenant's head, so that a thousand waiting requests cost the
// read pool one query per interval, not a thousand. Polling, not NOTIFY:
// changes commit in ingest's transactions on any node, which notify no
// one.
type headWatch struct {
	feed  stream.ChangeFeed
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	tenants map[int64]*tenantHead
}

// tenantHead is what a tenant's waiting requests share.
type tenantHead struct {
	waiters int
	head    int64         // the head last polled; -1 before the first poll
	moved   chan struct{} // closed, and replaced, when head moves
}

func newHeadWatch(feed stream.ChangeFeed, every time.Duration, log *slog.Logger) *headWatch {
	return &headWatch{feed: feed, every: every, log: log, tenants: map[int64]*tenantHead{}}
}

// wait returns the tenant's head once it passes seen, or seen when the
// deadline comes or ctx ends first.
func (w *headWatch) wait(ctx context.Context, tenantID, seen int64, deadline time.Time) int64 {
	t := w.join(tenantID)
	defer w.leave(t)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		w.mu.Lock()
		head, moved := t.head, t.moved
		w.mu.Unlock()
		if head > seen {
			return head
		}
		select {
		case <-moved:
		case <-timer.C:
			return seen
		case <-ctx.Done():
			return seen
		}
	}
}

// join counts a waiter of the tenant, starting its poller if none runs.
func (w *headWatch) join(tenantID int64) *tenantHead {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tenants[tenantID]
	if !ok {
		t = &tenantHead{head: -1, moved: make(chan struct{})}
		w.tenants[tenantID] = t
		go w.poll(tenantID, t)
	}
	t.waiters++
	return t
}

func (w *headWatch) leave(t *tenantHead) {
	w.mu.Lock()
	t.waiters--
	w.mu.Unlock()
}

// poll reads the tenant's head every interval until no request waits. A
// failed poll leaves the waiters waiting: each reads the feed when its
// wait ends, and answers that read's error if it fails too.
func (w *headWatch) poll(tenantID int64, t *tenantHead) {
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	failing := false
	for range tick.C {
		w.mu.Lock()
		if t.waiters == 0 {
			delete(w.tenants, tenantID)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), headPollTimeout)
		head, err := w.feed.ChangeHead(ctx, tenantID)
		cancel()
		if err != nil {
			if !failing {
				w.log.Warn("the change feed's long polls of a tenant cannot read its head; they are answered when their wait ends",
					"tenant_id", tenantID, "err", err)
			}
			failing = true
			continue
		}
		failing = false
		w.mu.Lock()
		if head != t.head {
			t.head = head
			close(t.moved)
			t.moved = make(chan struct{})
		}
		w.mu.Unlock()
	}
}
