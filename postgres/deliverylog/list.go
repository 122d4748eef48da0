package deliverylog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Columns are a delivery d's columns as Scan reads them, with its
// provider p's name and its events counted by outcome as a jsonb object
// (a probe of the event log's primary key); ReplayColumns the same of a
// delivery r of provider p. Constants, for the statement check.
const (
	Columns = `d.id::text, p.name, d.received_at, d.status, d.signature, coalesce(d.reason, ''), d.event_count,
       coalesce(d.replay_of::text, ''), coalesce(d.source, ''),
       (SELECT coalesce(jsonb_object_agg(o.outcome, o.n), '{}') FROM (
           SELECT e.outcome, count(*) AS n FROM events e
           WHERE e.tenant_id = d.tenant_id AND e.received_at = d.received_at AND e.delivery_id = d.id
           GROUP BY e.outcome) o)`
	ReplayColumns = `r.id::text, p.name, r.received_at, r.status, r.signature, coalesce(r.reason, ''), r.event_count,
       coalesce(r.replay_of::text, ''), coalesce(r.source, ''),
       (SELECT coalesce(jsonb_object_agg(o.outcome, o.n), '{}') FROM (
           SELECT e.outcome, count(*) AS n FROM events e
           WHERE e.tenant_id = r.tenant_id AND e.received_at = r.received_at AND e.delivery_id = r.id
           GROUP BY e.outcome) o)`
)

// Scan reads Columns into d.
func Scan(d *domain.DeliveryBrief, outcomes *[]byte) []any {
	return []any{&d.ID, &d.Provider, &d.ReceivedAt, &d.Status, &d.Signature, &d.Reason, &d.EventCount, &d.ReplayOf, &d.Source, outcomes}
}

// scanBrief reads Columns.
func scanBrief(row pgx.CollectableRow) (domain.DeliveryBrief, error) {
	var (
		d        domain.DeliveryBrief
		outcomes []byte
	)
	if err := row.Scan(Scan(&d, &outcomes)...); err != nil {
		return d, err
	}
	return d, json.Unmarshal(outcomes, &d.Outcomes)
}

// pagedLogSQL lists deliveries d along the primary key from a position,
// newest first (older than it) or oldest first (newer than it, a page
// before); %[1]s holds the condition that selects the rows (the tenant's
// filter, or the replays of one delivery), %[2]s the position's
// comparison and %[3]s the order.
const pagedLogSQL = `
SELECT ` + Columns + `
FROM deliveries d JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
WHERE d.tenant_id = @tenant_id%[1]s
  AND d.received_at %[2]s= @at AND (d.received_at, d.id) %[2]s (@at, @id::uuid)
ORDER BY d.received_at %[3]s, d.id %[3]s
LIMIT @limit`

// position is a delivery's place in the log, as its cursors carry it.
type position = deliveryCursor

// Querier runs a statement.
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// PagedList runs a list statement stmt whose condition is conds (each
// "AND ..."), a page at a time both ways, newest first: stmt holds conds
// in %[1]s, the comparison of its key with (@at, @id) in %[2]s and the
// order in %[3]s. key is a row's position.
func PagedList[T any](ctx context.Context, q Querier, stmt, conds string, args pgx.NamedArgs, page domain.Page,
	scan pgx.RowToFunc[T], key func(T) (time.Time, string)) (list []T, older, newer string, err error) {
	limit := pg.PageLimit(page)
	args["limit"] = limit + 1
	cmp, order := "<", "DESC"
	args["at"], args["id"] = pg.PosInfinity(), uuid.Max.String()
	cursor := page.Cursor
	if page.Before != "" {
		cmp, order, cursor = ">", "ASC", page.Before
	}
	if cursor != "" {
		var c position
		if err := pg.DecodeCursor(cursor, &c); err != nil {
			return nil, "", "", err
		}
		if _, err := uuid.Parse(c.ID); err != nil || c.ReceivedAt.IsZero() {
			return nil, "", "", pg.InvalidCursor()
		}
		args["at"], args["id"] = c.ReceivedAt, c.ID
	}
	rows, err := q.Query(ctx, fmt.Sprintf(stmt, conds, cmp, order), args)
	if err != nil {
		return nil, "", "", pg.Translate(err)
	}
	list, err = pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, "", "", pg.Translate(err)
	}
	list, more := pg.Trim(list, limit)
	if page.Before != "" {
		slices.Reverse(list)
	}
	if len(list) == 0 {
		return list, "", "", nil
	}
	// A page before another has that one after it; one after another, that
	// one before it.
	if page.Before != "" || more {
		at, id := key(list[len(list)-1])
		older = pg.EncodeCursor(position{ReceivedAt: at, ID: id})
	}
	if page.Cursor != "" || (page.Before != "" && more) {
		at, id := key(list[0])
		newer = pg.EncodeCursor(position{ReceivedAt: at, ID: id})
	}
	return list, older, newer, nil
}

func briefKey(d domain.DeliveryBrief) (time.Time, string) { return d.ReceivedAt, d.ID }

func logPage(list []domain.DeliveryBrief, older, newer string, err error) (domain.DeliveryLogPage, error) {
	return domain.DeliveryLogPage{Deliveries: list, Older: older, Newer: newer}, err
}

// DeliveryLog implements domain.DeliveryService, on the read pool.
func (s *Inspector) DeliveryLog(ctx context.Context, tenantID int64, f domain.DeliveryFilter, page domain.Page) (domain.DeliveryLogPage, error) {
	if err := f.Validate(); err != nil {
		return domain.DeliveryLogPage{}, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID}
	return logPage(PagedList(ctx, s.read, pagedLogSQL, pg.DeliveryConds(f, args), args, page, scanBrief, briefKey))
}

// countLogSQL counts the deliveries a filter matches, at most @limit.
const countLogSQL = `SELECT count(*) FROM (SELECT FROM deliveries d WHERE d.tenant_id = @tenant_id%s LIMIT @limit) c`

// CountDeliveries implements domain.DeliveryService, on the read pool.
func (s *Inspector) CountDeliveries(ctx context.Context, tenantID int64, f domain.DeliveryFilter, limit int) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "limit": limit + 1}
	var n int64
	err := s.read.QueryRow(ctx, fmt.Sprintf(countLogSQL, pg.DeliveryConds(f, args)), args).Scan(&n)
	return n, pg.Translate(err)
}

// ReplaysOf implements domain.DeliveryService, on the read pool: the
// deliveries_replay_of index finds them. An id that is not a UUID has no
// replays.
func (s *Inspector) ReplaysOf(ctx context.Context, tenantID int64, id string, page domain.Page) (domain.DeliveryLogPage, error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return domain.DeliveryLogPage{}, deliveryNotFound(id)
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "replay_of": parsed.String()}
	return logPage(PagedList(ctx, s.read, pagedLogSQL, "\n  AND d.replay_of = @replay_of::uuid", args, page, scanBrief, briefKey))
}
