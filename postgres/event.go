package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// eventLogSQL pages through the log newest first along the primary key.
// The plain received_at bound repeats the cursor's so that partitions newer
// than the cursor are pruned. %s holds the filter conditions in use: each
// combination is its own statement, planned for exactly those filters,
// rather than one statement of "(@x IS NULL OR ...)" whose generic plan
// would suit none of them.
const eventLogSQL = `
SELECT ` + loggedEventColumns + `
FROM events e JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
WHERE e.tenant_id = @tenant_id
  AND e.received_at <= @after_at AND (e.received_at, e.delivery_id, e.seq) < (@after_at, @after_delivery::uuid, @after_seq)%s
ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
LIMIT @limit`

// eventLogWordsSQL is eventLogSQL for a word search (@q): it takes the page
// from event_search, which has the log's key and the columns the filters
// name (as e, so that the same conditions apply), then reads those events.
// A common word is read along event_search's key until the page is full, a
// rare one through event_search_words; joined to the partitioned log
// first, the planner would hash every match instead. The cursor's and the
// filters' placeholders are eventLogSQL's.
const eventLogWordsSQL = `
SELECT ` + loggedEventColumns + `
FROM (
    SELECT e.tenant_id, e.received_at, e.delivery_id, e.seq FROM event_search e
    WHERE e.tenant_id = @tenant_id AND e.vector @@ websearch_to_tsquery('simple', @q)
      AND e.received_at <= @after_at AND (e.received_at, e.delivery_id, e.seq) < (@after_at, @after_delivery::uuid, @after_seq)%s
    ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
    LIMIT @limit
) w
JOIN events e ON e.tenant_id = w.tenant_id AND e.received_at = w.received_at AND e.delivery_id = w.delivery_id AND e.seq = w.seq
JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC`

// loggedEventColumns are what both statements read of an event.
const loggedEventColumns = `e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id, ` + eventHeadline

const (
	eventLogProvider   = `e.provider_id = (SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider)`
	eventLogObjectType = `e.object_type = @object_type`
	eventLogObjectID   = `e.object_id = @object_id`
	eventLogOutcome    = `e.outcome = @outcome`
	eventLogFrom       = `e.received_at >= @from`
	eventLogBefore     = `e.received_at < @before`
	eventLogContains   = `e.snapshot @> @contains::jsonb`
	// A word search with a containment filter, which event_search cannot
	// answer, or of one record's events: eventLogSQL with the words as a
	// condition.
	eventLogWords = `EXISTS (SELECT FROM event_search w WHERE w.tenant_id = e.tenant_id AND w.received_at = e.received_at
        AND w.delivery_id = e.delivery_id AND w.seq = e.seq AND w.vector @@ websearch_to_tsquery('simple', @q))`
	// A record id without its provider and object type leads no index.
	// Naming every provider and object type the tenant has lets the
	// events_record index answer it with one probe per combination.
	eventLogAnyProvider   = `e.provider_id = ANY (ARRAY (SELECT id FROM providers WHERE tenant_id = @tenant_id))`
	eventLogAnyObjectType = `e.object_type = ANY (ARRAY (SELECT DISTINCT object_type FROM scopes WHERE tenant_id = @tenant_id) || ''::text)`
)

// EventLog implements domain.EventService, for the console's event history
// and the API's event list alike. The search runs on the read pool, whose
// statement timeout stops a search too broad for the indexes.
func (s *events) EventLog(ctx context.Context, tenantID int64, q domain.EventLogQuery, page domain.Page) ([]domain.LoggedEvent, string, error) {
	if err := q.Validate(); err != nil {
		return nil, "", err
	}
	afterAt, after, err := eventPageStart(page)
	if err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	args := pgx.NamedArgs{"tenant_id": tenantID, "after_at": afterAt, "after_delivery": after.DeliveryID,
		"after_seq": after.Seq, "limit": limit + 1, "q": nil}
	c := pg.NewConds(args)
	if q.Provider != "" {
		c.Add(eventLogProvider, "provider", q.Provider)
	} else if q.ObjectID != "" {
		c.Cond(eventLogAnyProvider)
	}
	if q.ObjectType != "" {
		c.Add(eventLogObjectType, "object_type", q.ObjectType)
	} else if q.ObjectID != "" {
		c.Cond(eventLogAnyObjectType)
	}
	if q.ObjectID != "" {
		c.Add(eventLogObjectID, "object_id", q.ObjectID)
	}
	if q.Outcome != "" {
		c.Add(eventLogOutcome, "outcome", string(q.Outcome))
	}
	if !q.From.IsZero() {
		c.Add(eventLogFrom, "from", q.From)
	}
	if !q.Before.IsZero() {
		c.Add(eventLogBefore, "before", q.Before)
	}
	if len(q.Contains) > 0 {
		c.Add(eventLogContains, "contains", string(q.Contains))
	}
	statement := eventLogSQL
	if search := strings.TrimSpace(q.Search); search != "" {
		args["q"] = search
		// One record's events are few and found by the log's record
		// index; event_search has no index by record.
		if len(q.Contains) > 0 || q.ObjectID != "" {
			c.Cond(eventLogWords)
		} else {
			statement = eventLogWordsSQL
		}
	}
	sql := fmt.Sprintf(statement, c.SQL("  "))

	rows, err := s.read.Query(ctx, sql, customPlan, args)
	if err != nil {
		return nil, "", eventLogError(err)
	}
	events, err := pgx.CollectRows(rows, scanLoggedEvent)
	if err != nil {
		return nil, "", eventLogError(err)
	}
	events, more := pg.Trim(events, limit)
	if !more {
		return events, "", nil
	}
	last := events[len(events)-1]
	return events, pg.EncodeCursor(eventCursor{ReceivedAt: last.ReceivedAt, DeliveryID: last.DeliveryID, Seq: last.Seq}), nil
}

// eventLogError names a snapshot filter PostgreSQL cannot compare (such as
// a \u0000 escape, which jsonb refuses); translate names a search too broad
// for the read timeout.
func eventLogError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code[:2] == "22" {
		return domain.Errorf(domain.EINVALID, "the snapshot filter cannot be used: %s", pgErr.Message)
	}
	return pg.Translate(err)
}

func scanLoggedEvent(row pgx.CollectableRow) (domain.LoggedEvent, error) {
	var (
		e                domain.LoggedEvent
		objectID, reason *string
		conflictID       *int64
	)
	err := row.Scan(&e.DeliveryID, &e.Seq, &e.EventID, &e.Provider, &e.ObjectType, &e.Action, &objectID,
		&e.Revision, &e.Outcome, &reason, &e.ReceivedAt, &conflictID, &e.Headline)
	if objectID != nil {
		e.ObjectID = *objectID
	}
	if reason != nil {
		e.Reason = *reason
	}
	if conflictID != nil {
		e.ConflictID = *conflictID
	}
	return e, err
}

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
const eventDetailSQL = `
SELECT e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id, e.payload, e.snapshot,
       d.status, d.signature, d.reason, d.event_count
FROM events e
JOIN providers p ON p.tenant_id = e.tenant_id AND p.id = e.provider_id
LEFT JOIN deliveries d ON d.tenant_id = e.tenant_id AND d.received_at = e.received_at AND d.id = e.delivery_id
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
		conflictID                           *int64
		status, eventCount                   *int
	)
	err := s.read.QueryRow(ctx, eventDetailSQL, args).Scan(&d.DeliveryID, &d.Seq, &d.EventID, &d.Provider,
		&d.ObjectType, &d.Action, &objectID, &d.Revision, &d.Outcome, &reason, &d.ReceivedAt, &conflictID,
		&d.Payload, &d.Snapshot, &status, &signature, &dReason, &eventCount)
	if err != nil {
		return d, err
	}
	d.ObjectID, d.Reason = textOrEmpty(objectID), textOrEmpty(reason)
	if conflictID != nil {
		d.ConflictID = *conflictID
	}
	d.Delivery = domain.DeliveryBrief{ID: d.DeliveryID, Provider: d.Provider, ReceivedAt: d.ReceivedAt,
		Signature: textOrEmpty(signature), Reason: textOrEmpty(dReason)}
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

type eventCursor struct {
	ReceivedAt time.Time `json:"t"`
	DeliveryID string    `json:"d"`
	Seq        int       `json:"s"`
}

// eventPageStart reads an event-log cursor: where the page starts, newest
// first. Without a cursor the page starts above every event.
func eventPageStart(page domain.Page) (afterAt any, after eventCursor, err error) {
	after = eventCursor{DeliveryID: uuid.Max.String(), Seq: math.MaxInt32}
	if page.Cursor == "" {
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, after, nil
	}
	if err := pg.DecodeCursor(page.Cursor, &after); err != nil {
		return nil, after, err
	}
	if _, err := uuid.Parse(after.DeliveryID); err != nil || after.ReceivedAt.IsZero() {
		return nil, after, pg.InvalidCursor()
	}
	return after.ReceivedAt, after, nil
}
