package stream

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// The sender (internal/outbound) pushes each destination's changes from
// the node that holds the destination's lease; Outbox is what it needs of
// storage. A lease lasts a ttl and is renewed while the node runs, so
// across restarts, crashes and several nodes one node at a time sends a
// destination's changes.

// LeasedDestination is a destination whose lease a sender holds, with what
// it needs to send: the secrets that sign now (two during a rotation) and
// the tenant's slug for NATS subjects.
type LeasedDestination struct {
	TenantID     int64
	ID           int64
	TenantSlug   string
	Kind         string // a kind of internal/sink
	URL          string // an http(s) URL, or empty for NATS
	NATSURL      string
	Subject      string
	AllowPrivate bool
	MaxInFlight  int
	Format       string // FormatStandard or FormatSlack
	// Filter and Transform are its CEL expressions, "" for none: the
	// sender compiles them (internal/shape).
	Filter, Transform string
	Secrets           []string
	NATS              NATSAuth // decrypted; empty for a destination without credentials
}

// Stepped is what a Step found: whether the destination is failing, the
// changes due, and the secrets that sign now, read in the same round trip
// so that the first message after a rotation carries the new signature
// (nil when none opens: the lease's secrets go on signing).
type Stepped struct {
	Failing bool
	Due     []QueuedChange
	Secrets []string
}

// QueuedChange is a change of a destination's queue that is due, or an
// alert event: then Alert is set and Position is its queue position
// (AlertQueueBase), the change otherwise empty.
type QueuedChange struct {
	Change
	Alert    *alerting.Event
	Attempts int // the attempts that failed before
	// Data is the message's data when the destination's transform made it,
	// nil for the change itself.
	Data json.RawMessage
}

// MessageID is the webhook-id of the queued change or alert event.
func (c QueuedChange) MessageID() string {
	if c.Alert != nil {
		return c.Alert.MessageID()
	}
	return c.ID()
}

// AttemptResult is the outcome of one attempt; Retry is when a failed one
// is tried again (Backoff).
type AttemptResult struct {
	DestinationAttempt
	Retry time.Duration
	// Filtered: the destination's filter passed over the change or alert
	// event, which leaves the queue unsent, counted, with no attempt.
	Filtered bool
	// Fault is set when the destination's filter or transform failed on
	// it: the attempt is recorded with its Error, the message stays
	// queued, and the destination becomes failing with Fault as its
	// status reason.
	Fault string
}

// Outbox is the storage of the sender. Every call on a destination but
// RecordAttempts and TrimAttempts takes or lists nothing unless owner holds its
// lease: a node that lost a lease can neither take changes into the queue
// nor pick them to send.
type Outbox interface {
	// RenewDestinations renews, for ttl, owner's leases of active
	// destinations, and returns them. A destination owner held and that is
	// not returned (paused, deleted, given back idle, or taken after the
	// lease ran out) is no longer its.
	RenewDestinations(ctx context.Context, owner string, ttl time.Duration) ([]LeasedDestination, error)
	// TakeDestinations takes, for ttl, the leases of up to limit active
	// destinations that no owner holds and that have something to send
	// (changes or alert events past their cursors, or a queue), in turns
	// by tenant, so that no tenant's surplus goes before another's first;
	// owner then holds at most share of one tenant's, counting held, those
	// it holds now by tenant id.
	TakeDestinations(ctx context.Context, owner string, ttl time.Duration, limit, share int,
		held map[int64]int) ([]LeasedDestination, error)
	// ReleaseIdle gives back owner's lease of a destination that has
	// nothing to send, and reports whether it did: one with work keeps it.
	ReleaseIdle(ctx context.Context, owner string, tenantID, id int64) (bool, error)
	// ReleaseDestinations ends owner's leases of ds, for another node to
	// take them at once.
	ReleaseDestinations(ctx context.Context, owner string, ds []LeasedDestination) error
	// Step records the results of attempts (RecordAttempts), takes the
	// changes after the destination's cursor into its queue, those it
	// selects, advancing the cursor past those it scanned, likewise the
	// alert events after its alert cursor, and lists up to limit changes
	// of the queue due to be sent, lowest positions first: the first
	// pending change of each record, when its retry is due, but none of
	// inFlight. Alert events wait in the queue as one record of their own:
	// the first pending one is listed first, when due and not in flight.
	Step(ctx context.Context, owner string, tenantID, id int64, done []AttemptResult, inFlight []int64,
		limit int) (Stepped, error)
	// RecordAttempts records attempts: one delivered leaves the queue, one
	// failed is retried after its Retry. It reports whether the
	// destination is failing: a change of it has failed for
	// DestinationGiveUp, which pauses it.
	RecordAttempts(ctx context.Context, tenantID, id int64, results []AttemptResult) (failing bool, err error)
	// TrimAttempts forgets all but the latest attempts of a destination.
	TrimAttempts(ctx context.Context, tenantID, id int64) error
}
