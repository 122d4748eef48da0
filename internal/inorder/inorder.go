// Package inorder lets a queue worker hand one tenant's deliveries to the
// ingest (domain.IngestService.Ingest) all at once, each on its own
// goroutine, and still have them committed in the order it chose. Each
// delivery is a link of a chain: the committer queues a delivery only after
// the one before it was queued (or finished without being written), and
// writes it only if the one before it committed. A delivery after one that
// failed fails without being written, so the worker can write the rest
// again in order: no delivery ever commits ahead of an earlier one of its
// chain.
//
// The chain travels in the context (With, From): Ingest's signature is the
// one synchronous mode uses.
package inorder

import (
	"context"
	"sync"
)

// state is where a link's delivery is.
type state int

const (
	pending   state = iota
	committed       // its transaction committed
	failed          // it was not written, or its transaction rolled back
	skipped         // it finished without being written, and without failing (recorded before)
)

// Link is one delivery of a chain.
type Link struct {
	prev     *Link
	queued   chan struct{}
	queueOne sync.Once

	mu     sync.Mutex
	state  state
	inLine bool // the committer queued it
}

// After returns the link that follows prev (nil: the first of a chain).
func After(prev *Link) *Link { return &Link{prev: prev, queued: make(chan struct{})} }

type key struct{}

// With returns ctx carrying l: the Ingest called with it writes its
// delivery as l's.
func With(ctx context.Context, l *Link) context.Context { return context.WithValue(ctx, key{}, l) }

// From returns the link ctx carries, or nil.
func From(ctx context.Context) *Link {
	l, _ := ctx.Value(key{}).(*Link)
	return l
}

// Queued is closed once the committer queued the delivery, or once it
// finished without being queued.
func (l *Link) Queued() <-chan struct{} { return l.queued }

// WaitTurn waits until the delivery before l was queued or finished: the
// committer queues l only then.
func (l *Link) WaitTurn(ctx context.Context) error {
	if l.prev == nil {
		return nil
	}
	select {
	case <-l.prev.queued:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MarkQueued is the committer's: the delivery has its place in the queue.
func (l *Link) MarkQueued() {
	l.mu.Lock()
	l.inLine = true
	l.mu.Unlock()
	l.queueOne.Do(func() { close(l.queued) })
}

// Settle records whether the delivery committed (err nil) or not.
func (l *Link) Settle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settle(err)
}

func (l *Link) settle(err error) {
	if err == nil {
		l.state = committed
	} else {
		l.state = failed
	}
}

// Finish is the worker's, once the Ingest called with l returned err: a
// delivery the committer never queued is skipped (nothing to write) or
// failed, and the next one may take its turn.
func (l *Link) Finish(err error) {
	l.mu.Lock()
	switch {
	case l.inLine:
		l.settle(err) // a refusal logged instead (err nil) counts as written
	case err == nil:
		l.state = skipped
	default:
		l.state = failed
	}
	l.mu.Unlock()
	l.queueOne.Do(func() { close(l.queued) })
}

// Before is the nearest link before l whose delivery was written or
// failed, passing over those skipped; nil when there is none.
func (l *Link) Before() *Link {
	p := l.prev
	for p != nil && p.is(skipped) {
		p = p.prev
	}
	return p
}

// Committed reports whether l's delivery committed.
func (l *Link) Committed() bool { return l.is(committed) }

func (l *Link) is(s state) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == s
}
