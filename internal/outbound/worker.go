package outbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/internal/tracing"
)

// trimEvery is how often a worker trims its destination's attempts.
const trimEvery = time.Minute

// worker sends one leased destination's changes.
type worker struct {
	s     *Sender
	lease leaseState
	log   *slog.Logger

	ctx    context.Context // the worker's loop: ends when it stops
	cancel context.CancelFunc
	// sends is the sends' context: it ends Drain after the worker stops,
	// so an answer on its way is recorded rather than sent again.
	sends       context.Context
	cancelSends context.CancelFunc
	done        chan struct{}
}

// startWorker runs a worker for d, whose lease runs until until.
func startWorker(ctx context.Context, s *Sender, d stream.LeasedDestination, until time.Time) *worker {
	w := &worker{s: s, done: make(chan struct{}), log: s.o.Log.With("tenant_id", d.TenantID, "destination_id", d.ID)}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.sends, w.cancelSends = context.WithCancel(context.WithoutCancel(ctx))
	w.lease.set(d, until)
	go w.run()
	return w
}

func (w *worker) renew(d stream.LeasedDestination, until time.Time) { w.lease.set(d, until) }

func (w *worker) destination() stream.LeasedDestination {
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

// stop ends the worker's loop, lets the sends in flight finish for up to
// drain (each is cut off when the lease would end in any case), and waits
// until it has exited with their answers recorded.
func (w *worker) stop(drain time.Duration) {
	w.cancel()
	cut := time.AfterFunc(drain, w.cancelSends)
	defer cut.Stop()
	<-w.done
}

// sent is what a send reports: its result, or discard when a send that
// did not deliver was cut off (the worker stops or its lease would end):
// the change is left for whoever holds the lease next.
type sent struct {
	result  stream.AttemptResult
	discard bool
}

// prefetch is how many changes a worker takes from the queue ahead of its
// senders, per unit of max_in_flight: the database round trips of
// recording answers and picking changes overlap the sends.
const prefetch = 32

// run loops until ctx ends, the worker is stopped or its destination is
// failing: record the answers that came, take new changes into the queue,
// pick the due ones while fewer than prefetch are taken, and wait for an
// answer or the next poll. max_in_flight senders send what is picked, in
// the order picked.
func (w *worker) run() {
	ctx := w.ctx
	d, _ := w.lease.get()
	limit := d.MaxInFlight * prefetch
	taken := map[int64]bool{} // picked, and not yet recorded
	todo := make(chan stream.QueuedChange, limit)
	answers := make(chan sent, limit) // never full: each taken change has one answer
	var pending []stream.AttemptResult
	var senders sync.WaitGroup
	for range d.MaxInFlight {
		senders.Go(func() {
			for c := range todo {
				answers <- w.send(ctx, c)
			}
		})
	}
	defer func() {
		w.cancel()
		close(todo)
		defer w.cancelSends()
		senders.Wait()
		close(answers)
		w.recordLast(d, pending, answers)
		close(w.done)
	}()
	poll := time.NewTicker(w.s.o.Poll)
	defer poll.Stop()
	lastTrim := time.Now()
	busy := time.Now() // when the worker last had a change taken
	for {
		if w.cycle(ctx, d, &pending, taken, limit, todo) {
			return
		}
		if len(taken) > 0 {
			busy = time.Now()
		} else if time.Since(busy) >= w.s.o.Idle {
			if w.giveBack(ctx, d) {
				return
			}
			busy = time.Now()
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
			pending = w.take(a, pending, taken)
			for more := true; more; {
				select {
				case a := <-answers:
					pending = w.take(a, pending, taken)
				default:
					more = false
				}
			}
		case <-poll.C:
		}
	}
}

// giveBack gives the lease back when the destination has nothing to send,
// so that it holds no slot of this node, and reports whether it did.
func (w *worker) giveBack(ctx context.Context, d stream.LeasedDestination) bool {
	released, err := w.s.store.ReleaseIdle(ctx, w.s.o.Owner, d.TenantID, d.ID)
	if err != nil && ctx.Err() == nil {
		w.log.Error("destination sender: give back the lease of an idle destination", "err", err)
	}
	if released {
		w.log.Debug("destination sender: nothing to send; lease given back")
	}
	return released
}

// recordLast records, as the worker exits, the answers its last sends
// got: a change delivered is not sent again by the next node.
func (w *worker) recordLast(d stream.LeasedDestination, pending []stream.AttemptResult, answers <-chan sent) {
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
// the taken.
func (w *worker) take(a sent, pending []stream.AttemptResult, taken map[int64]bool) []stream.AttemptResult {
	if a.discard {
		delete(taken, a.result.Position)
		return pending
	}
	return append(pending, a.result)
}

// cycle records the answers that came and, while fewer than limit changes
// are taken and the lease has more than half its ttl left, takes new
// changes into the queue and hands the due ones to the senders: one round
// trip (Outbox.Step). Answers it could not record stay pending for the
// next cycle. It reports whether the destination is failing.
func (w *worker) cycle(ctx context.Context, d stream.LeasedDestination, pending *[]stream.AttemptResult,
	taken map[int64]bool, limit int, todo chan<- stream.QueuedChange) bool {
	_, until := w.lease.get()
	room := limit - len(taken) + len(*pending) // the recorded leave taken
	pick := room > 0 && time.Until(until) >= w.s.o.LeaseTTL/2
	if len(*pending) == 0 && !pick {
		return false
	}
	var failing bool
	var due []stream.QueuedChange
	var err error
	var signing []string
	if pick {
		inFlight := make([]int64, 0, len(taken))
		recorded := map[int64]bool{}
		for _, r := range *pending {
			recorded[r.Position] = true
		}
		for p := range taken {
			if !recorded[p] {
				inFlight = append(inFlight, p)
			}
		}
		var stepped stream.Stepped
		stepped, err = w.s.store.Step(ctx, w.s.o.Owner, d.TenantID, d.ID, *pending, inFlight, room)
		failing, due, signing = stepped.Failing, stepped.Due, stepped.Secrets
	} else {
		failing, err = w.s.store.RecordAttempts(ctx, d.TenantID, d.ID, *pending)
	}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			w.log.Error("destination sender: record attempts and pick changes; retrying", "err", err)
		}
		return false
	case failing:
		w.log.Warn("destination sender: a change failed for too long; the destination is failing and paused",
			"give_up", stream.DestinationGiveUp)
		*pending = nil
		return true
	}
	for _, r := range *pending {
		delete(taken, r.Position)
	}
	*pending = nil
	if len(signing) > 0 {
		w.lease.setSecrets(signing) // before the due are sent: a rotation signs the next message
	}
	for _, c := range due {
		taken[c.Position] = true
		todo <- c
	}
	return false
}

// send makes one attempt, cut off at the timeout, when the lease would end
// or when the worker's drain ends. A change whose turn comes when the
// worker stops, or with less than half the lease left, is not sent.
func (w *worker) send(ctx context.Context, c stream.QueuedChange) sent {
	d, until := w.lease.get()
	r := stream.AttemptResult{DestinationAttempt: stream.DestinationAttempt{Position: c.Position, ChangeID: c.MessageID()}}
	if ctx.Err() != nil || time.Until(until) < w.s.o.LeaseTTL/2 {
		return sent{result: r, discard: true}
	}
	if shaped, ok := w.shape(d, &c, &r); !ok {
		return shaped
	}
	deadline := time.Now().Add(w.s.o.Timeout)
	if until.Before(deadline) {
		deadline = until
	}
	sctx, cancel := context.WithDeadline(w.sends, deadline)
	defer cancel()
	sctx, span := tracing.StartRoot(sctx, "destination send", trace.WithSpanKind(trace.SpanKindProducer))
	start := time.Now()
	a := w.s.sinks.Send(sctx, d, c)
	r.At, r.Status, r.Error, r.Duration = start, a.Status, a.Err, time.Since(start)
	endSendSpan(span, d, c, r)
	if !r.Delivered() && (w.sends.Err() != nil || !time.Now().Before(until)) {
		return sent{result: r, discard: true}
	}
	if !r.Delivered() {
		r.Retry = stream.Backoff(c.Attempts+1, a.RetryAfter)
		w.log.Debug("destination sender: attempt failed", "message", c.MessageID(), "attempts", c.Attempts+1,
			"status", a.Status, "err", a.Err, "retry", r.Retry)
	}
	return sent{result: r}
}

// shape applies d's filter and transform to c: it reports whether c is
// to be sent (with its transform's data set), or else what to record: a
// change or alert event the filter passed over, or the fault of an
// expression that failed on it, which makes the destination failing and
// keeps it queued, to be sent once the expression is fixed and the
// destination resumed.
func (w *worker) shape(d stream.LeasedDestination, c *stream.QueuedChange, r *stream.AttemptResult) (sent, bool) {
	s, err := w.s.shapes.Get(d.Filter, d.Transform)
	if s == nil && err == nil {
		return sent{}, true
	}
	matched := false
	if err == nil {
		if c.Alert != nil {
			matched, err = s.Alert(*c.Alert)
		} else {
			var res shape.Result
			res, err = s.Change(c.Change)
			matched, c.Data = res.Matched, res.Data
		}
	}
	if err != nil {
		field, cause := shape.FieldFilter, err
		var e *shape.EvalError
		if errors.As(err, &e) {
			field, cause = e.Field, e.Err
		}
		failed := fmt.Sprintf("the %s failed on %s: %s", field, c.MessageID(), cause)
		r.At, r.Error = time.Now(), "not sent: "+failed
		r.Fault = failed + "; fix it (PATCH the destination, or tidemark destination update), then resume"
		r.Retry = stream.Backoff(c.Attempts+1, 0)
		w.log.Warn("destination sender: an expression failed; the destination is failing", "message", c.MessageID(), "err", err)
		return sent{result: *r}, false
	}
	if !matched {
		r.Filtered = true
		return sent{result: *r}, false
	}
	return sent{}, true
}

// endSendSpan closes an attempt's span with its destination, change and
// answer: ids, counts and the status only, never the URL (it can hold a
// token), the body or the error's text (it quotes the answer).
func endSendSpan(span trace.Span, d stream.LeasedDestination, c stream.QueuedChange, r stream.AttemptResult) {
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrTenant.String(d.TenantSlug), attribute.Int64("tidemark.destination.id", d.ID),
			attribute.Int64("tidemark.change.position", c.Position), attribute.Int("tidemark.attempt", c.Attempts+1),
			attribute.Int("http.response.status_code", r.Status))
		if !r.Delivered() {
			tracing.Fail(span, "not delivered")
		}
	}
	span.End()
}
