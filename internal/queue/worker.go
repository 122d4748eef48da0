package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/reqlog"
	"github.com/tidemark/tidemark/internal/tracing"
)

// Settings of the consumers and of each message's handling.
const (
	// ackWait is how long JetStream waits for a worker's acknowledgement
	// before delivering the message again (to any worker). A worker
	// extends it before each attempt, so only a dead one lets it pass; it
	// is how long a dead worker's partition waits.
	ackWait = 10 * time.Second
	// ingestTimeout bounds one attempt at a delivery's ingest, well within
	// ackWait.
	ingestTimeout = 5 * time.Second
	// MaxAttempts is how often a delivery may fail for a reason other than
	// an unavailable database (its provider was deleted, a bug) before it
	// is moved to the dead-letter stream. Deliveries of the message to
	// workers that died count too: a message that kills workers is poison.
	MaxAttempts = 5
)

// WorkerStats counts what a worker did with the messages it took.
type WorkerStats struct {
	Applied     atomic.Int64 // ingested and committed
	Events      atomic.Int64 // their events
	Already     atomic.Int64 // delivered again after their commit: acknowledged, nothing written
	Refused     atomic.Int64 // refused by the database (a 400 in synchronous mode): logged as refused deliveries
	DeadLetters atomic.Int64 // moved to the dead-letter stream
}

func (s *WorkerStats) String() string {
	return fmt.Sprintf("%d deliveries applied (%d events), %d already applied, %d refused, %d dead letters",
		s.Applied.Load(), s.Events.Load(), s.Already.Load(), s.Refused.Load(), s.DeadLetters.Load())
}

// consumerName names the durable consumer of partition p.
func consumerName(p int) string { return fmt.Sprintf("in-%02d", p) }

func (q *Queue) consumerConfig(p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       consumerName(p),
		Description:   "Tidemark workers: partition " + strconv.Itoa(p),
		FilterSubject: q.cfg.Stream + ".in." + strconv.Itoa(p) + ".*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1, // the worker decides when a message is poison
		// One worker at a time consumes a partition (its lease,
		// owner.go), with up to this many of its messages in flight.
		MaxAckPending: maxInFlight,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// Work consumes the partitions whose leases it holds until ctx ends,
// applying each delivery with store, and returns what it did. It keeps
// trying while NATS or the database is unavailable.
func (q *Queue) Work(ctx context.Context, store domain.QueueStore, leases Leases, stats *WorkerStats) {
	for {
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := q.Ensure(ectx, false)
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		q.log.Warn("delivery queue not ready; the worker waits for it", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	o := &owner{leases: leases, log: q.log, held: map[int]bool{}}
	defer o.close()
	var wg sync.WaitGroup
	for p := range Partitions {
		wg.Go(func() { q.consume(ctx, p, o, store, stats) })
	}
	wg.Wait()
}

// opened is a message whose seal verified, with its delivery.
type opened struct {
	msg      jetstream.Msg
	qd       domain.QueuedDelivery
	seq      uint64 // its place in the stream
	attempts int    // deliveries of the message to workers so far
	// unerased: a check for several deliveries at once found nothing of
	// them erased since their receipt (pipeline.checkErasures).
	unerased bool
}

// open verifies and decodes msg. A message that does not verify (nothing
// of it is read before its signature does) is a dead letter; one of a newer
// version is left for a worker that reads it. Either way open returns false.
func (q *Queue) open(ctx context.Context, msg jetstream.Msg, stats *WorkerStats) (*opened, bool) {
	m := &opened{msg: msg, attempts: 1}
	if meta, err := msg.Metadata(); err == nil {
		m.attempts, m.seq = int(meta.NumDelivered), meta.Sequence.Stream
	}
	plain, c, err := q.keys.open(msg.Subject(), msg.Headers(), msg.Data())
	if err == nil {
		m.qd, err = decode(plain)
	}
	if err == nil {
		err = q.checkClaim(msg.Subject(), c, m.qd)
	}
	var version errVersion
	if errors.As(err, &version) {
		// Left for a worker that reads it (workers are upgraded first).
		q.log.Error("queued delivery left for a newer worker", "err", err)
		msg.NakWithDelay(5 * time.Second)
		return nil, false
	}
	if err != nil {
		q.deadLetter(ctx, msg, m.attempts, err, stats)
		return nil, false
	}
	return m, true
}

// applyRetrying applies m and acknowledges it after the commit. It holds
// the message while it retries, so its tenant waits, in order:
// indefinitely while the database is unavailable, MaxAttempts times in all
// for any other failure, after which the message is a dead letter.
func (q *Queue) applyRetrying(ctx context.Context, m *opened, store domain.QueueStore, stats *WorkerStats) {
	attempts := m.attempts
	m.unerased = false // what was checked before may have been erased since
	wait, warned := 100*time.Millisecond, time.Time{}
	for {
		m.msg.InProgress()
		err := q.apply(ctx, m, attempts > 1, store, stats)
		switch {
		case err == nil:
			// A lost acknowledgement redelivers the message, which then
			// finds its delivery recorded.
			m.msg.Ack()
			return
		case ctx.Err() != nil:
			m.msg.Nak() // the partition's next owner takes it at once
			return
		case domain.ErrorCode(err) == domain.EUNAVAILABLE || errors.Is(err, context.DeadlineExceeded):
			if time.Since(warned) > 30*time.Second {
				q.log.Warn("queued delivery waits for the database: retrying", "delivery", m.qd.Delivery.ID, "err", err)
				warned = time.Now()
			}
		case attempts >= MaxAttempts:
			q.deadLetter(ctx, m.msg, attempts, err, stats)
			return
		default:
			q.log.Warn("queued delivery failed; retrying", "delivery", m.qd.Delivery.ID, "attempt", attempts, "err", err)
			attempts++
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// checkClaim refuses a message whose envelope names another tenant or
// provider than its signed headers, or whose subject is not its tenant's.
func (q *Queue) checkClaim(subject string, c claim, qd domain.QueuedDelivery) error {
	if named := claimOf(qd); named != c {
		return errUnsealed{fmt.Sprintf("the message was signed for tenant %d (%s), provider %d (%s), but names tenant %d (%s), provider %d (%s)",
			c.TenantID, c.TenantSlug, c.ProviderID, c.ProviderName, named.TenantID, named.TenantSlug, named.ProviderID, named.ProviderName)}
	}
	if want := q.subject(c.TenantID); subject != want {
		return errUnsealed{fmt.Sprintf("the message of tenant %d was published on %s, not on %s", c.TenantID, subject, want)}
	}
	return nil
}

// apply ingests qd as synchronous mode would have at its receipt: the same
// delivery (id, receipt time, verdict) and events through the same
// IngestService.Ingest. A delivery already recorded (its message was
// delivered again after a worker committed it and died, or its ack was
// lost) is acknowledged without writing anything: ingesting it again would
// fail on the delivery's primary key, so it is never applied twice.
func (q *Queue) apply(ctx context.Context, m *opened, redelivered bool, store domain.QueueStore, stats *WorkerStats) (err error) {
	qd := m.qd
	ctx, cancel := context.WithTimeout(ctx, ingestTimeout)
	defer cancel()
	d := qd.Delivery
	// A queued delivery's application is a trace of its own (the webhook's
	// ended when the queue stored it), named by the same delivery id.
	ctx, span := tracing.StartRoot(ctx, "apply queued delivery")
	tracing.NoteEndpoint(ctx, qd.TenantSlug, qd.ProviderName, qd.ProviderKind, d.ID)
	// Its log lines carry the tenant and delivery as a request's do.
	ctx, _ = reqlog.With(ctx)
	reqlog.SetTenant(ctx, qd.TenantSlug)
	reqlog.SetDelivery(ctx, d.ID)
	defer func() {
		if err != nil {
			tracing.Fail(span, domain.ErrorCode(err))
		}
		span.End()
	}()
	if redelivered {
		if done, err := store.DeliveryRecorded(ctx, d.TenantID, d.ID, d.ReceivedAt); err != nil || done {
			if done {
				stats.Already.Add(1)
			}
			return err
		}
	}
	p, err := store.Endpoint(ctx, qd.TenantSlug, qd.ProviderName)
	if err == nil && (p.TenantID != d.TenantID || p.ID != d.ProviderID) {
		err = domain.Errorf(domain.ENOTFOUND, "provider %s of tenant %s was deleted since the delivery was queued", qd.ProviderName, qd.TenantSlug)
	}
	if err != nil {
		return err
	}
	// Events of a record or lead erased since the receipt are dropped, as
	// the erase would have dropped them; the delivery is still recorded.
	events, dropped := qd.Events, 0
	if !m.unerased {
		if events, dropped, err = domain.DropErased(ctx, store, &d, qd.Events); err != nil {
			return err
		}
	}
	if dropped > 0 {
		q.log.InfoContext(ctx, "queued events of an erased record or lead dropped", "delivery", d.ID, "events", dropped)
	}
	results, err := store.Ingest(ctx, d, p, events)
	if err == nil {
		tracing.NoteOutcomes(span, results)
		stats.Applied.Add(1)
		stats.Events.Add(int64(len(results)))
		return nil
	}
	if domain.ErrorCode(err) == domain.EINVALID {
		// Synchronous mode answers 400 and logs a refused delivery.
		d.Status, d.Reason = 400, domain.ErrorMessage(err)
		count := domain.RefusalCount{TenantID: d.TenantID, ProviderID: d.ProviderID, Minute: domain.RefusalMinute(d.ReceivedAt), N: 1}
		if err := store.LogRefusals(ctx, []domain.RefusalCount{count}, []domain.Delivery{d}); err != nil {
			return err
		}
		stats.Refused.Add(1)
		q.log.WarnContext(ctx, "queued delivery refused by the database, logged as a refused delivery", "delivery", d.ID,
			"tenant", qd.TenantSlug, "provider", qd.ProviderName, "reason", d.Reason)
		return nil
	}
	// Another attempt at it may have committed (a timed-out group commit
	// that went through, a second worker after the ack wait).
	if done, rerr := store.DeliveryRecorded(ctx, d.TenantID, d.ID, d.ReceivedAt); rerr == nil && done {
		stats.Already.Add(1)
		return nil
	}
	return err
}

// deadLetter moves msg to the dead-letter stream, with why and after how
// many attempts, then acknowledges it so that its partition goes on.
func (q *Queue) deadLetter(ctx context.Context, msg jetstream.Msg, attempts int, why error, stats *WorkerStats) {
	subject := strings.Replace(msg.Subject(), q.cfg.Stream+".in.", q.cfg.Stream+".dead.", 1)
	out := &nats.Msg{Subject: subject, Data: msg.Data(), Header: nats.Header{}}
	for k, v := range msg.Headers() {
		out.Header[k] = v
	}
	out.Header.Set(headerReason, why.Error())
	out.Header.Set(headerAttempts, strconv.Itoa(attempts))
	// A worker dying between this publish and the ack publishes it again:
	// the same id within the duplicate window stores it once. The id is
	// the message's place in the stream, which a message published by
	// anyone else cannot claim (its Nats-Msg-Id could).
	id := "dead-" + msg.Subject()
	if meta, err := msg.Metadata(); err == nil {
		id = "dead-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	}
	for {
		_, err := q.js.PublishMsg(ctx, out, jetstream.WithMsgID(id), jetstream.WithExpectStream(q.DeadStream()))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			msg.Nak()
			return
		}
		q.log.Warn("could not store a dead letter; retrying", "err", err)
		msg.InProgress()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	msg.Ack()
	stats.DeadLetters.Add(1)
	q.log.Error("queued delivery moved to the dead-letter stream", "stream", q.DeadStream(), "subject", subject,
		"delivery", msg.Headers().Get(headerDelivery), "attempts", attempts, "err", why)
}
