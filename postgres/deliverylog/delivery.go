// Package deliverylog is the delivery log's reads for the console and the
// API: one delivery with its request, body, events and replays (the
// inspector), the log paged both ways with its count, and the replays of
// a delivery.
package deliverylog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Inspector serves domain.DeliveryService on the read pool.
type Inspector struct{ read *pgxpool.Pool }

// New returns the delivery log's reads on pools' read pool.
func New(pools pg.Pools) *Inspector { return &Inspector{read: pools.ForReads()} }

var _ domain.DeliveryService = (*Inspector)(nil)

// eventDetailSlack is how far from its id's timestamp a delivery's
// received time is looked for first.
const eventDetailSlack = time.Hour

// uuidV7Time is the instant in a UUIDv7's first 48 bits (Unix milliseconds).
func uuidV7Time(id uuid.UUID) time.Time {
	var ms int64
	for _, b := range id[:6] {
		ms = ms<<8 | int64(b)
	}
	return time.UnixMilli(ms)
}

// deliveryDetailSQL finds one delivery by id. The (tenant_id, id) index of
// each partition answers it; the caller also bounds received_at by the
// UUIDv7's time, so that only a partition or two are probed.
const deliveryDetailSQL = `
SELECT d.id::text, p.name, p.kind, t.slug, d.received_at, d.status, d.signature, coalesce(d.reason, ''),
       d.event_count, coalesce(d.replay_of::text, ''), coalesce(d.method, ''), coalesce(d.path, ''),
       coalesce(d.query, ''), d.headers, coalesce(d.truncated, false), coalesce(d.client_address, ''), d.body,
       d.answered_at, coalesce(d.source, '')
FROM deliveries d
JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
JOIN tenants t ON t.id = d.tenant_id
WHERE d.tenant_id = @tenant_id AND d.id = @id::uuid AND d.received_at >= @from AND d.received_at <= @to`

// deliveryEventsSQL lists a delivery's events along the log's primary key.
const deliveryEventsSQL = `
SELECT seq, event_id, object_type, action, coalesce(object_id, ''), revision, outcome, coalesce(reason, '')
FROM events
WHERE tenant_id = @tenant_id AND received_at = @received_at AND delivery_id = @id::uuid
ORDER BY seq`

// replayBodySQL reads a replay's body from its original: a replay stores
// none (its body is NULL) and refers to the original's. Originals are
// older than their replays, which bounds the partitions probed.
const replayBodySQL = `
SELECT d.body FROM deliveries d
WHERE d.tenant_id = @tenant_id AND d.id = @replay_of::uuid AND d.received_at <= @received_at`

// deliveryReplaysSQL pages a delivery's replays, oldest first: their
// number is bounded only by time (replay.ManualPerMinute).
const deliveryReplaysSQL = `
SELECT received_at, id::text FROM deliveries
WHERE tenant_id = @tenant_id AND replay_of = @id::uuid
  AND received_at >= @replays_after_at AND (received_at, id) > (@replays_after_at, @replays_after_id::uuid)
ORDER BY received_at, id
LIMIT @replays_limit`

// Delivery implements domain.DeliveryService. An id that is not a UUID is
// ENOTFOUND like any other unknown delivery.
func (s *Inspector) Delivery(ctx context.Context, tenantID int64, id string) (domain.DeliveryDetail, error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return domain.DeliveryDetail{}, deliveryNotFound(id)
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "id": parsed.String(), "from": pg.NegInfinity(), "to": pg.PosInfinity()}
	if parsed.Version() == 7 {
		minted := uuidV7Time(parsed)
		args["from"], args["to"] = minted.Add(-eventDetailSlack), minted.Add(eventDetailSlack)
	}
	d, err := s.delivery(ctx, args)
	if errors.Is(err, pgx.ErrNoRows) && parsed.Version() == 7 {
		// A clock other than the one that minted the id stamped it.
		args["from"], args["to"] = pg.NegInfinity(), pg.PosInfinity()
		d, err = s.delivery(ctx, args)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return d, deliveryNotFound(id)
	}
	return d, pg.Translate(err)
}

func (s *Inspector) delivery(ctx context.Context, args pgx.NamedArgs) (domain.DeliveryDetail, error) {
	var (
		d        domain.DeliveryDetail
		headers  []byte
		answered pgtype.Timestamptz
	)
	err := s.read.QueryRow(ctx, deliveryDetailSQL, args).Scan(&d.ID, &d.Provider, &d.ProviderKind, &d.TenantSlug,
		&d.ReceivedAt, &d.Status, &d.Signature, &d.Reason, &d.EventCount, &d.ReplayOf, &d.Request.Method,
		&d.Request.Path, &d.Request.Query, &headers, &d.Request.Truncated, &d.Request.ClientAddress, &d.Body, &answered, &d.Source)
	if err != nil {
		return d, err
	}
	d.AnsweredAt = answered.Time
	if headers != nil {
		if err := json.Unmarshal(headers, &d.Request.Headers); err != nil {
			return d, fmt.Errorf("delivery %s headers: %w", d.ID, err)
		}
	}
	args["received_at"] = d.ReceivedAt
	batch := &pgx.Batch{}
	if d.Body == nil && d.ReplayOf != "" {
		args["replay_of"] = d.ReplayOf
		batch.Queue(replayBodySQL, args).Query(func(rows pgx.Rows) error {
			body, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if len(body) == 1 {
				d.Body = body[0]
			}
			return err
		})
	}
	batch.Queue(deliveryEventsSQL, args).Query(func(rows pgx.Rows) (err error) {
		d.Events, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.DeliveryEvent, error) {
			var e domain.DeliveryEvent
			return e, row.Scan(&e.Seq, &e.EventID, &e.ObjectType, &e.Action, &e.ObjectID, &e.Revision, &e.Outcome, &e.Reason)
		})
		return err
	})
	limit := replaysArgs(args, deliveryCursor{}, domain.Page{})
	batch.Queue(deliveryReplaysSQL, args).Query(func(rows pgx.Rows) (err error) {
		d.Replays, d.MoreReplays, err = collectReplays(rows, limit)
		return err
	})
	return d, s.read.SendBatch(ctx, batch).Close()
}

// replaysArgs sets deliveryReplaysSQL's page arguments: after c (the
// start when zero), page's limit, which it returns.
func replaysArgs(args pgx.NamedArgs, c deliveryCursor, page domain.Page) int {
	args["replays_after_at"], args["replays_after_id"] = pg.NegInfinity(), uuid.Nil.String()
	if c.ID != "" {
		args["replays_after_at"], args["replays_after_id"] = c.ReceivedAt, c.ID
	}
	limit := pg.PageLimit(page)
	args["replays_limit"] = limit + 1
	return limit
}

func collectReplays(rows pgx.Rows, limit int) ([]string, string, error) {
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (deliveryCursor, error) {
		var c deliveryCursor
		return c, row.Scan(&c.ReceivedAt, &c.ID)
	})
	if err != nil {
		return nil, "", err
	}
	keys, more := pg.Trim(keys, limit)
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	if !more {
		return ids, "", nil
	}
	return ids, pg.EncodeCursor(keys[len(keys)-1]), nil
}

// DeliveryReplays implements domain.DeliveryService, on the read pool. An
// id that is not a UUID has no replays.
func (s *Inspector) DeliveryReplays(ctx context.Context, tenantID int64, id string, page domain.Page) ([]string, string, error) {
	parsed, err := uuid.Parse(id)
	if err != nil {
		return nil, "", deliveryNotFound(id)
	}
	var c deliveryCursor
	if page.Cursor != "" {
		if err := pg.DecodeCursor(page.Cursor, &c); err != nil {
			return nil, "", err
		}
		if _, err := uuid.Parse(c.ID); err != nil || c.ReceivedAt.IsZero() {
			return nil, "", pg.InvalidCursor()
		}
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "id": parsed.String()}
	limit := replaysArgs(args, c, page)
	rows, err := s.read.Query(ctx, deliveryReplaysSQL, args)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	ids, next, err := collectReplays(rows, limit)
	return ids, next, pg.Translate(err)
}

func deliveryNotFound(id string) error { return pg.NotFound("delivery %q not found", id) }

// deliveryLogSQL pages through the delivery log newest first along the
// primary key; %s holds the filter conditions in use (pg.DeliveryConds), as
// eventLogSQL does.
const deliveryLogSQL = `
SELECT d.id::text, p.name, d.received_at, d.status, d.signature, coalesce(d.reason, ''), d.event_count,
       coalesce(d.replay_of::text, ''), coalesce(d.source, '')
FROM deliveries d JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
WHERE d.tenant_id = @tenant_id
  AND d.received_at <= @after_at AND (d.received_at, d.id) < (@after_at, @after_id::uuid)%s
ORDER BY d.received_at DESC, d.id DESC
LIMIT @limit`

type deliveryCursor struct {
	ReceivedAt time.Time `json:"t"`
	ID         string    `json:"d"`
}

// Deliveries implements domain.DeliveryService, on the read pool.
func (s *Inspector) Deliveries(ctx context.Context, tenantID int64, f domain.DeliveryFilter, page domain.Page) ([]domain.DeliveryBrief, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	args := pgx.NamedArgs{"tenant_id": tenantID, "after_at": pg.PosInfinity(), "after_id": uuid.Max.String(), "limit": limit + 1}
	if page.Cursor != "" {
		var c deliveryCursor
		if err := pg.DecodeCursor(page.Cursor, &c); err != nil {
			return nil, "", err
		}
		if _, err := uuid.Parse(c.ID); err != nil || c.ReceivedAt.IsZero() {
			return nil, "", pg.InvalidCursor()
		}
		args["after_at"], args["after_id"] = c.ReceivedAt, c.ID
	}
	rows, err := s.read.Query(ctx, fmt.Sprintf(deliveryLogSQL, pg.DeliveryConds(f, args)), args)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.DeliveryBrief, error) {
		var d domain.DeliveryBrief
		return d, row.Scan(&d.ID, &d.Provider, &d.ReceivedAt, &d.Status, &d.Signature, &d.Reason, &d.EventCount, &d.ReplayOf, &d.Source)
	})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	list, more := pg.Trim(list, limit)
	if !more {
		return list, "", nil
	}
	last := list[len(list)-1]
	return list, pg.EncodeCursor(deliveryCursor{ReceivedAt: last.ReceivedAt, ID: last.ID}), nil
}
