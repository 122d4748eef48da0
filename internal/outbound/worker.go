package outbound

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// trimEvery is how often a worker trims its destination's attempts.
const trimEvery = time.Minute

// worker sends one leased destination's changes.
type worker struct {
	s     *Sender
	lease leaseState
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// startWorker runs a worker for d, whose lease runs until until.
func startWorker(ctx context.Context, s *Sender, d domain.LeasedDestination, until time.Time) *worker {
	w := &worker{s: s, done: make(chan struct{}), log: s.o.Log.With("tenant_id", d.TenantID, "destination_id", d.ID)}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.lease.set(d, until)
	go w.run()
	return w
}

func (w *worker) renew(d domain.LeasedDestination, until time.Time) { w.lease.set(d, until) }

func (w *worker) destination() domain.LeasedDestination {
	d, _ := w.lease.get()
	return d
}

func (w *worker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop cancels the worker's sends and waits until it has exited.
func (w *worker) stop() {
	w.cancel()
	<-w.done
}

// sent is what a send reports: its result, or discard when a send that
// did not deliver was cut off (the worker stops or its lease would end):
// the change is left for whoever holds the lease next.
type sent struct {
	result  domain.AttemptResult
	discard bool
}

// run loops until ctx ends, the worker is stopped or its destination is
// failing: record the answers that came, take new changes into the queue,
// start the due ones while there is room, and wait for an answer or the
// next poll.
func (w *worker) run() {
	ctx := w.ctx
	d, _ := w.lease.get()
	inFlight := map[int64]bool{}
	answers := make(chan sent, domain.MaxMaxInFlight)
	var pending []domain.AttemptResult
	var sends sync.WaitGroup
	defer func() {
		w.cancel()
		sends.Wait()
		close(answers)
		w.recordLast(d, pending, answers)
		close(w.done)
	}()
	poll := time.NewTicker(w.s.o.Poll)
	defer poll.Stop()
	lastTrim := time.Now()
	for {
		if len(pending) > 0 {
			failing, err := w.s.store.RecordAttempts(ctx, d.TenantID, d.ID, pending)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					w.log.Error("destination sender: record attempts; retrying", "err", err)
				}
			case failing:
				w.log.Warn("destination sender: a change failed for too long; the destination is failing and paused",
					"give_up", domain.DestinationGiveUp)
				pending = nil
				return
			default:
				for _, r := range pending {
					delete(inFlight, r.Position)
				}
				pending = nil
			}
		}
		if len(pending) == 0 {
			w.start(ctx, inFlight, answers, &sends)
		}
		if time.Since(lastTrim) > trimEvery {
			lastTrim = time.Now()
			if err := w.s.store.TrimAttempts(ctx, d.TenantID, d.ID); err != nil && ctx.Err() == nil {
				w.log.Error("destination sender: trim attempts", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case a := <-answers:
			pending = w.take(a, pending, inFlight)
			for more := true; more; {
				select {
				case a := <-answers:
					pending = w.take(a, pending, inFlight)
				default:
					more = false
				}
			}
		case <-poll.C:
		}
	}
}

// recordLast records, as the worker exits, the answers its last sends
// got: a change delivered is not sent again by the next node.
func (w *worker) recordLast(d domain.LeasedDestination, pending []domain.AttemptResult, answers <-chan sent) {
	for a := range answers {
		if !a.discard {
			pending = append(pending, a.result)
		}
	}
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 2*time.Second)
	defer cancel()
	if _, err := w.s.store.RecordAttempts(ctx, d.TenantID, d.ID, pending); err != nil {
		w.log.Warn("destination sender: could not record the last attempts; those delivered will be sent again", "err", err)
	}
}

// take adds an answer to those to record; a discarded send just leaves
// the flight.
func (w *worker) take(a sent, pending []domain.AttemptResult, inFlight map[int64]bool) []domain.AttemptResult {
	if a.discard {
		delete(inFlight, a.result.Position)
		return pending
	}
	return append(pending, a.result)
}

// start fills the queue and starts the due changes while there is room and
// the lease has more than half its ttl left.
func (w *worker) start(ctx context.Context, inFlight map[int64]bool, answers chan<- sent, sends *sync.WaitGroup) {
	d, until := w.lease.get()
	room := d.MaxInFlight - len(inFlight)
	if room <= 0 || time.Until(until) < w.s.o.LeaseTTL/2 {
		return
	}
	if _, err := w.s.store.FillQueue(ctx, w.s.o.Owner, d.TenantID, d.ID); err != nil {
		if ctx.Err() == nil {
			w.log.Error("destination sender: fill queue", "err", err)
		}
		return
	}
	due, err := w.s.store.DueChanges(ctx, w.s.o.Owner, d.TenantID, d.ID, slices.Collect(maps.Keys(inFlight)), room)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error("destination sender: due changes", "err", err)
		}
		return
	}
	for _, c := range due {
		inFlight[c.Position] = true
		sends.Add(1)
		go func() {
			defer sends.Done()
			answers <- w.send(ctx, d, c, until)
		}()
	}
}

// send makes one attempt, cut off at the timeout or when the lease would
// end.
func (w *worker) send(ctx context.Context, d domain.LeasedDestination, c domain.QueuedChange, until time.Time) sent {
	deadline := time.Now().Add(w.s.o.Timeout)
	if until.Before(deadline) {
		deadline = until
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	start := time.Now()
	var a answer
	if d.NATSURL != "" {
		a = w.s.publish(sctx, d, c.Change)
	} else {
		a = w.s.post(sctx, d, c.Change)
	}
	r := domain.AttemptResult{DestinationAttempt: domain.DestinationAttempt{Position: c.Position, ChangeID: c.ID(),
		At: start, Status: a.status, Error: a.err, Duration: time.Since(start)}}
	if !r.Delivered() && (ctx.Err() != nil || !time.Now().Before(until)) {
		return sent{result: r, discard: true}
	}
	if !r.Delivered() {
		r.Retry = domain.Backoff(c.Attempts+1, a.retryAfter)
		w.log.Debug("destination sender: attempt failed", "change", c.ID(), "attempts", c.Attempts+1,
			"status", a.status, "err", a.err, "retry", r.Retry)
	}
	return sent{result: r}
}
