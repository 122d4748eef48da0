package queue

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/inorder"
)

// maxWindowEvents bounds the events of one tenant's deliveries in flight:
// no more than the group committer admits from one process without
// measuring its pace (postgres/ingest's minQueuedEvents, two groups'
// worth), so that a worker is never refused for its own backlog.
const maxWindowEvents = 4000

// pipeline applies one tenant's messages of a partition through the group
// committer, several in flight, each queued and committed only after the
// one before it (internal/inorder), and acknowledges each after its commit. When one
// fails, those after it fail unwritten, and the pipeline applies them all
// again one at a time, in order, as a worker always did.
type pipeline struct {
	part  *ownedPartition
	in    chan *opened
	fresh bool // nothing applied yet: the next message checks its place first
}

// flight is a message handed to the ingest.
type flight struct {
	m    *opened
	link *inorder.Link
	done chan error // buffered; read once
	err  error
}

func (pl *pipeline) run(ctx context.Context) {
	var window []*flight
	var prev *inorder.Link
	events := 0
	in := pl.in
	for in != nil || len(window) > 0 {
		var next chan *opened
		if events < maxWindowEvents {
			next = in
		}
		var oldest chan error
		if len(window) > 0 {
			oldest = window[0].done
		}
		select {
		case m, ok := <-next:
			if !ok {
				in = nil
				continue
			}
			run := pl.gather(m, maxWindowEvents-events)
			pl.checkErasures(ctx, run)
			for _, m := range run {
				if ctx.Err() != nil {
					m.msg.Nak()
					pl.part.settled(m)
					continue
				}
				if pl.fresh || m.attempts > 1 {
					// A first message, or one delivered again, may follow
					// messages of its tenant that another worker held: it
					// waits until they are gone from the stream.
					pl.finish(ctx, window)
					window, prev, events = nil, nil, 0
					if !pl.inPlace(ctx, m) {
						continue
					}
				}
				f := pl.launch(ctx, m, prev)
				window, prev = append(window, f), f.link
				events += len(m.qd.Events)
			}
		case err := <-oldest:
			f := window[0]
			f.err = err
			if err == nil {
				pl.ack(f)
				window = window[1:]
				events -= len(f.m.qd.Events)
				continue
			}
			// Every delivery after f fails unwritten (or finds itself
			// recorded): apply f and them again, one at a time.
			pl.finish(ctx, window)
			window, prev, events = nil, nil, 0
		}
	}
}

// gather returns m and the messages waiting after it, up to room events.
func (pl *pipeline) gather(m *opened, room int) []*opened {
	run := []*opened{m}
	room -= len(m.qd.Events)
	for room > 0 {
		select {
		case next, ok := <-pl.in:
			if !ok {
				return run
			}
			run = append(run, next)
			room -= len(next.qd.Events)
			continue
		default:
		}
		break
	}
	return run
}

// checkErasures asks once, for all of run, whether records or leads they
// name were erased since the earliest receipt among them, per provider;
// when none was, their deliveries are applied without asking each.
func (pl *pipeline) checkErasures(ctx context.Context, run []*opened) {
	if len(run) < 2 {
		return
	}
	byProvider := map[int64][]*opened{}
	for _, m := range run {
		byProvider[m.qd.Delivery.ProviderID] = append(byProvider[m.qd.Delivery.ProviderID], m)
	}
	for _, ms := range byProvider {
		earliest := ms[0].qd.Delivery
		var events []domain.Event
		for _, m := range ms {
			if m.qd.Delivery.ReceivedAt.Before(earliest.ReceivedAt) {
				earliest.ReceivedAt = m.qd.Delivery.ReceivedAt
			}
			events = append(events, m.qd.Events...)
		}
		earliest.Body = nil
		if _, dropped, err := domain.DropErased(ctx, pl.part.store, &earliest, events); err == nil && dropped == 0 {
			for _, m := range ms {
				m.unerased = true
			}
		}
	}
}

// launch hands m to the ingest, after prev in its chain.
func (pl *pipeline) launch(ctx context.Context, m *opened, prev *inorder.Link) *flight {
	f := &flight{m: m, link: inorder.After(prev), done: make(chan error, 1)}
	go func() {
		err := pl.part.q.apply(inorder.With(ctx, f.link), m, m.attempts > 1, pl.part.store, pl.part.stats)
		f.link.Finish(err)
		f.done <- err
	}()
	return f
}

// finish waits for every flight of window, acknowledging those that
// committed and applying the others again one at a time, in order.
func (pl *pipeline) finish(ctx context.Context, window []*flight) {
	var again []*flight
	for _, f := range window {
		err := f.err
		if err == nil {
			err = <-f.done
		}
		if err == nil { // committed, or nothing to write
			pl.ack(f)
			continue
		}
		again = append(again, f)
	}
	for _, f := range again {
		pl.part.q.applyRetrying(ctx, f.m, pl.part.store, pl.part.stats)
		pl.part.settled(f.m)
	}
}

func (pl *pipeline) ack(f *flight) {
	f.m.msg.Ack()
	pl.part.settled(f.m)
}

// inPlace reports whether m is its tenant's first message in the stream:
// every earlier one was applied and acknowledged. Acknowledgements of this
// worker's own may take a moment to reach the stream. A message that is
// not is left to be delivered again in a second; one no longer in the
// stream (acknowledged after it was delivered again) is acknowledged.
func (pl *pipeline) inPlace(ctx context.Context, m *opened) bool {
	for try := 0; ; try++ {
		first, err := pl.part.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(m.msg.Subject()))
		switch {
		case err == nil && first.Sequence == m.seq:
			pl.fresh = false
			return true
		case err == nil && first.Sequence > m.seq, errors.Is(err, jetstream.ErrMsgNotFound):
			m.msg.Ack()
			pl.part.settled(m)
			return false
		case try == 20 || ctx.Err() != nil:
			if err != nil && ctx.Err() == nil {
				pl.part.q.log.Warn("queued delivery: could not read its tenant's first message; trying again", "err", err)
			}
			m.msg.NakWithDelay(time.Second)
			pl.part.settled(m)
			pl.fresh = true
			return false
		}
		sleep(ctx, 5*time.Millisecond)
	}
}
