package lists

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/snapshot"
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

// loggedEventColumns are what both statements read of an event, its
// delivery's source among them (a probe of the delivery log's key).
const loggedEventColumns = `e.delivery_id::text, e.seq, e.event_id, p.name, e.object_type, e.action, e.object_id, e.revision,
       e.outcome, e.reason, e.received_at, e.conflict_id, ` + eventHeadline + `,
       CASE WHEN @q::text IS NULL THEN NULL ELSE e.snapshot END,
       (SELECT coalesce(d.source, '') FROM deliveries d
        WHERE d.tenant_id = e.tenant_id AND d.received_at = e.received_at AND d.id = e.delivery_id)`

// eventHeadline is the headline of the event's snapshot (for the API).
const eventHeadline = `CASE WHEN @q::text IS NULL THEN ''
        ELSE ` + headlineOf + `e` + headlineEnd + ` END`

// eventCountSQL counts, up to @bound, the events eventLogSQL pages
// through with the same conditions (%s), and how many of them are newer
// than the first of the page shown (@first_, NULL without one).
const eventCountSQL = `
SELECT count(*), count(*) FILTER (WHERE (c.received_at, c.delivery_id, c.seq) > (@first_at, @first_delivery::uuid, @first_seq))
FROM (
    SELECT e.received_at, e.delivery_id, e.seq FROM events e
    WHERE e.tenant_id = @tenant_id%s
    ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
    LIMIT @bound
) c`

// eventCountWordsSQL is eventCountSQL for eventLogWordsSQL.
const eventCountWordsSQL = `
SELECT count(*), count(*) FILTER (WHERE (c.received_at, c.delivery_id, c.seq) > (@first_at, @first_delivery::uuid, @first_seq))
FROM (
    SELECT e.received_at, e.delivery_id, e.seq FROM event_search e
    WHERE e.tenant_id = @tenant_id AND e.vector @@ websearch_to_tsquery('simple', @q)%s
    ORDER BY e.received_at DESC, e.delivery_id DESC, e.seq DESC
    LIMIT @bound
) c`

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

// EventLog implements domain.EventService, for the API's event list.
func (s *Lists) EventLog(ctx context.Context, tenantID int64, q domain.EventLogQuery, page domain.Page) ([]domain.LoggedEvent, string, error) {
	page.Before, page.Count = "", 0
	events, info, err := s.EventLogPage(ctx, tenantID, q, page)
	return events, info.Next, err
}

// EventLogPage implements domain.EventService, for the console's event
// history. The search runs on the read pool, whose statement timeout stops
// a search too broad for the indexes; a count it stops is left out.
func (s *Lists) EventLogPage(ctx context.Context, tenantID int64, q domain.EventLogQuery, page domain.Page) ([]domain.LoggedEvent, domain.PageInfo, error) {
	if err := q.Validate(); err != nil {
		return nil, domain.PageInfo{}, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "q": nil}
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
	statement, count := eventLogSQL, eventCountSQL
	search := strings.TrimSpace(q.Search)
	if search != "" {
		args["q"] = search
		// One record's events are few and found by the log's record
		// index; event_search has no index by record.
		if len(q.Contains) > 0 || q.ObjectID != "" {
			c.Cond(eventLogWords)
		} else {
			statement, count = eventLogWordsSQL, eventCountWordsSQL
		}
	}
	conds := c.SQL("  ")
	keyed, info, err := pg.Both(page, func(after eventCursor, start, newer bool, limit int) ([]pg.Keyed[domain.LoggedEvent, eventCursor], error) {
		a := maps.Clone(args)
		a["limit"] = limit + 1
		a["after_at"], a["after_delivery"], a["after_seq"] = any(after.ReceivedAt), after.DeliveryID, after.Seq
		if !start {
			a["after_at"], a["after_delivery"], a["after_seq"] = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, uuid.Max.String(), math.MaxInt32
		} else if _, err := uuid.Parse(after.DeliveryID); err != nil || after.ReceivedAt.IsZero() {
			return nil, pg.InvalidCursor()
		}
		sql := fmt.Sprintf(statement, conds)
		if newer {
			sql = pg.Ascending(sql)
		}
		rows, err := s.read.Query(ctx, sql, customPlan, a)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (pg.Keyed[domain.LoggedEvent, eventCursor], error) {
			e, err := scanLoggedEvent(row, search)
			return pg.Keyed[domain.LoggedEvent, eventCursor]{Row: e, Key: eventCursor{ReceivedAt: e.ReceivedAt, DeliveryID: e.DeliveryID, Seq: e.Seq}}, err
		})
	})
	if err != nil {
		return nil, info, eventLogError(err)
	}
	if page.Count > 0 {
		a := maps.Clone(args)
		a["bound"] = page.Count + 1
		a["first_at"], a["first_delivery"], a["first_seq"] = nil, nil, nil
		if len(keyed) > 0 {
			k := keyed[0].Key
			a["first_at"], a["first_delivery"], a["first_seq"] = k.ReceivedAt, k.DeliveryID, k.Seq
		}
		// A count the read timeout stops is left out, not an error.
		if err := s.read.QueryRow(ctx, fmt.Sprintf(count, conds), customPlan, a).Scan(&info.Total, &info.Offset); err != nil && !errors.Is(pg.Translate(err), domain.ErrReadTimeout) {
			return nil, info, eventLogError(err)
		}
	}
	return pg.Rows(keyed), info, nil
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

func scanLoggedEvent(row pgx.CollectableRow, search string) (domain.LoggedEvent, error) {
	var (
		e                domain.LoggedEvent
		objectID, reason *string
		conflictID       *int64
		snap             []byte
		source           *string // NULL for an event whose delivery is gone
	)
	err := row.Scan(&e.DeliveryID, &e.Seq, &e.EventID, &e.Provider, &e.ObjectType, &e.Action, &objectID,
		&e.Revision, &e.Outcome, &reason, &e.ReceivedAt, &conflictID, &e.Headline, &snap, &source)
	if snap != nil {
		e.Matches = snapshot.Matches(snap, search, maxMatches)
	}
	if objectID != nil {
		e.ObjectID = *objectID
	}
	if reason != nil {
		e.Reason = *reason
	}
	if conflictID != nil {
		e.ConflictID = *conflictID
	}
	if source != nil {
		e.Source = *source
	}
	return e, err
}

type eventCursor struct {
	ReceivedAt time.Time `json:"t"`
	DeliveryID string    `json:"d"`
	Seq        int       `json:"s"`
}
