package feedread

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Readers are the consumers and the destination's receiver of one run.
type Readers struct {
	receiver  *Receiver
	consumers []*sightings
	errs      []error // each consumer's, once stopped
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	stopOnce  sync.Once
	stopErr   error
}

// Follow starts consumers following tenant's feed at base with token from
// its start, next to rc, the receiver of the tenant's destination.
func Follow(ctx context.Context, rc *Receiver, base, tenant, token string, consumers int) *Readers {
	follow, cancel := context.WithCancel(ctx)
	r := &Readers{receiver: rc, errs: make([]error, consumers), cancel: cancel}
	for i := range consumers {
		got := &sightings{}
		r.consumers = append(r.consumers, got)
		r.wg.Go(func() { r.errs[i] = followFeed(follow, base, tenant, token, got) })
	}
	return r
}

// AwaitDrain waits until every reader has every change committed so far
// in the database of conn, or timeout has passed.
func (r *Readers) AwaitDrain(ctx context.Context, conn *pgx.Conn, timeout time.Duration) error {
	var total int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM changes`).Scan(&total); err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		caughtUp := r.receiver.got.distinct() >= total
		for _, c := range r.consumers {
			caughtUp = caughtUp && c.distinct() >= total
		}
		if caughtUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Stop ends the consumers and the receiver, and returns the consumers'
// errors.
func (r *Readers) Stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.stopErr = errors.Join(append(r.errs, r.receiver.Stop())...)
	})
	return r.stopErr
}

// Stats are each reader's, the consumers' first.
func (r *Readers) Stats(changes []CommittedChange, w Window) []Stats {
	var out []Stats
	for i, c := range r.consumers {
		name := "feed consumer"
		if len(r.consumers) > 1 {
			name += " " + strconv.Itoa(i+1)
		}
		out = append(out, statsOf(name, changes, c.list(), w))
	}
	return append(out, statsOf("destination", changes, r.receiver.got.list(), w))
}

// Refused is how many messages the receiver refused, and why the first
// was ("" for none).
func (r *Readers) Refused() (n int64, first string) {
	if why := r.receiver.firstRefusal.Load(); why != nil {
		first = *why
	}
	return r.receiver.refused.Load(), first
}
