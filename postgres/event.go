package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const (
	eventLogObjectTypesSQL = `SELECT DISTINCT object_type FROM scopes WHERE tenant_id = @tenant_id ORDER BY 1`
)

// EventLogChoices implements domain.EventService.
func (s *events) EventLogChoices(ctx context.Context, tenantID int64) (domain.EventLogChoices, error) {
	var c domain.EventLogChoices
	args := pgx.NamedArgs{"tenant_id": tenantID}
	batch := &pgx.Batch{}
	batch.Queue(providerNamesSQL, args).Query(func(rows pgx.Rows) (err error) {
		c.Providers, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	batch.Queue(eventLogObjectTypesSQL, args).Query(func(rows pgx.Rows) (err error) {
		c.ObjectTypes, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return c, pg.Translate(s.read.SendBatch(ctx, batch).Close())
}

// eventDetailSQL finds one event by its delivery and position. The primary
// key leads with received_at, so the caller bounds it: the delivery id is a
// UUIDv7 minted as the delivery arrived, whose timestamp narrows the search
// to a partition or two.
//
// A replay's event that said what its original's event at the same
// position said stores neither payload nor snapshot (ingest's
// replayOutcomeSQL): they are read from the original, which is older than
// the replay, as the replay's body is (deliverylog). An erased event has
// none either, and neither has its original: erasure takes both.
const eventDetailSQL = `
SELECT e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id, coalesce(e.payload, o.payload), coalesce(e.snapshot, o.snapshot),
       d.status, d.signature, d.reason, d.event_count, d.source
FROM events e
JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
LEFT JOIN deliveries d ON d.tenant_id = e.tenant_id AND d.received_at = e.received_at AND d.id = e.delivery_id
LEFT JOIN LATERAL (
    SELECT o.payload, o.snapshot FROM deliveries od
    JOIN events o ON o.tenant_id = od.tenant_id AND o.received_at = od.received_at AND o.delivery_id = od.id
    WHERE od.tenant_id = e.tenant_id AND od.id = d.replay_of AND od.received_at <= e.received_at AND o.seq = e.seq
) o ON e.payload IS NULL
WHERE e.tenant_id = @tenant_id AND e.delivery_id = @delivery_id::uuid AND e.seq = @seq
  AND e.received_at >= @from AND e.received_at <= @to`

// eventDetailSlack is how far from its delivery id's timestamp an event's
// received time is looked for first.
const eventDetailSlack = time.Hour

// EventDetail implements domain.EventService. An id that is not a UUID
// is an ENOTFOUND error like any other unknown event.
func (s *events) EventDetail(ctx context.Context, tenantID int64, deliveryID string, seq int) (domain.EventDetail, error) {
	id, err := uuid.Parse(deliveryID)
	if err != nil || seq < 0 {
		return domain.EventDetail{}, eventNotFound(deliveryID, seq)
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "delivery_id": id.String(), "seq": seq,
		"from": pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true},
		"to":   pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}}
	if id.Version() == 7 {
		minted := uuidV7Time(id)
		args["from"], args["to"] = minted.Add(-eventDetailSlack), minted.Add(eventDetailSlack)
	}
	d, err := s.eventDetail(ctx, args)
	if errors.Is(err, pgx.ErrNoRows) && id.Version() == 7 {
		// A clock other than the one that minted the id stamped the event.
		args["from"] = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
		args["to"] = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
		d, err = s.eventDetail(ctx, args)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return d, eventNotFound(deliveryID, seq)
	}
	return d, pg.Translate(err)
}

func (s *events) eventDetail(ctx context.Context, args pgx.NamedArgs) (domain.EventDetail, error) {
	var (
		d                                    domain.EventDetail
		objectID, reason, signature, dReason *string
		source                               *string
		conflictID                           *int64
		status, eventCount                   *int
	)
	err := s.read.QueryRow(ctx, eventDetailSQL, args).Scan(&d.DeliveryID, &d.Seq, &d.EventID, &d.Provider,
		&d.ObjectType, &d.Action, &objectID, &d.Revision, &d.Outcome, &reason, &d.ReceivedAt, &conflictID,
		&d.Payload, &d.Snapshot, &status, &signature, &dReason, &eventCount, &source)
	if err != nil {
		return d, err
	}
	d.ObjectID, d.Reason = textOrEmpty(objectID), textOrEmpty(reason)
	if conflictID != nil {
		d.ConflictID = *conflictID
	}
	d.Delivery = domain.DeliveryBrief{ID: d.DeliveryID, Provider: d.Provider, ReceivedAt: d.ReceivedAt,
		Signature: textOrEmpty(signature), Reason: textOrEmpty(dReason), Source: textOrEmpty(source)}
	if status != nil {
		d.Delivery.Status, d.Delivery.EventCount = *status, *eventCount
	}
	return d, nil
}

func textOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// uuidV7Time is the instant in a UUIDv7's first 48 bits (Unix milliseconds).
func uuidV7Time(id uuid.UUID) time.Time {
	var ms int64
	for _, b := range id[:6] {
		ms = ms<<8 | int64(b)
	}
	return time.UnixMilli(ms)
}

func eventNotFound(deliveryID string, seq int) error {
	return pg.NotFound("event %d of delivery %q not found", seq, deliveryID)
}

// eventOutcomeSQL finds the latest outcome of an event id since a time.
const eventOutcomeSQL = `
SELECT outcome FROM events
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND event_id = @event_id AND received_at >= @since
ORDER BY received_at DESC, seq DESC LIMIT 1`

// EventOutcome implements domain.EventService.
func (s *events) EventOutcome(ctx context.Context, tenantID, providerID int64, eventID string, since time.Time) (domain.Outcome, error) {
	var o string
	err := s.read.QueryRow(ctx, eventOutcomeSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"event_id": eventID, "since": since}).Scan(&o)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", pg.NotFound("no event %q since %s", eventID, since.Format(time.RFC3339))
	}
	if err != nil {
		return "", pg.Translate(err)
	}
	return domain.Outcome(o), nil
}

// findEventSQL finds a record's event by its id along the record's index.
const findEventSQL = `
SELECT e.delivery_id, e.seq FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
WHERE e.tenant_id = @tenant_id AND p.name = @provider AND e.object_type = @object_type AND e.object_id = @object_id
  AND e.event_id = @event_id
ORDER BY e.received_at DESC, e.seq DESC LIMIT 1`

// FindEvent implements domain.EventService.
func (s *events) FindEvent(ctx context.Context, tenantID int64, ref domain.RecordRef, eventID string) (string, int, error) {
	var (
		delivery string
		seq      int
	)
	err := s.read.QueryRow(ctx, findEventSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider": ref.Provider,
		"object_type": ref.ObjectType, "object_id": ref.ObjectID, "event_id": eventID}).Scan(&delivery, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, pg.NotFound("no event %q of %s %s", eventID, ref.ObjectType, ref.ObjectID)
	}
	return delivery, seq, pg.Translate(err)
}
