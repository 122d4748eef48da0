// Package destinations manages a tenant's destinations: where its changes
// are pushed, their signing secrets, pause, resume and rewind
// (docs/contract/destinations.md). Sending is the sender's; whether a URL
// may be reached is checked before a destination is stored here
// (sink.Check), since storage calls out to nothing.
package destinations

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Manager implements stream.DestinationService on pool; its reads use the
// read pool.
type Manager struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
	keys *pg.Keyring
}

// New returns the destinations of pools, whose secrets keys seal.
func New(pools pg.Pools, keys *pg.Keyring) *Manager {
	return &Manager{pool: pools.Write, read: pools.ForReads(), keys: keys}
}

var _ stream.DestinationService = (*Manager)(nil)

// destinationColumns are a destination's columns as scanDestination reads
// them. Its pending count is its queue and what it selects after its
// cursors, which a sender has yet to take (all that waits while it is
// paused), at most waitingCounted of the changes. Its lag is the oldest
// change in its queue or, with the queue empty, the first change of the
// feed after its cursor.
const destinationColumns = `d.tenant_id, d.id, d.kind, coalesce(d.url, ''), coalesce(d.nats_url, ''), coalesce(d.subject, ''),
       coalesce((SELECT p.name FROM providers p WHERE p.tenant_id = d.tenant_id AND p.id = d.provider_id), ''),
       coalesce(d.object_type, ''), d.types, d.format, coalesce(d.filter, ''), coalesce(d.transform, ''), d.filtered, d.allow_private,
       coalesce(nullif(n.auth, 'none'), ''), coalesce(n.tls_ca, false),
       d.max_in_flight, d.status, coalesce(d.status_reason, ''),
       d.cursor, ` + pg.BehindRetentionSQL + `, d.created_at, d.last_success_at, q.pending + wc.n + wa.n,
       coalesce(q.oldest, (SELECT c.committed_at FROM changes c
                           WHERE c.tenant_id = d.tenant_id AND c.position > d.cursor ORDER BY c.position LIMIT 1))
FROM destinations d
LEFT JOIN destination_nats_credentials n ON n.tenant_id = d.tenant_id AND n.destination_id = d.id
CROSS JOIN LATERAL (SELECT count(*) AS pending, min(dq.committed_at) AS oldest FROM destination_queue dq
                    WHERE dq.tenant_id = d.tenant_id AND dq.destination_id = d.id) q
CROSS JOIN LATERAL (SELECT count(*) AS n FROM (
                        SELECT FROM changes c WHERE c.tenant_id = d.tenant_id AND c.position > d.cursor
                          AND ` + pg.DestinationSelectsSQL + `
                        LIMIT ` + waitingCounted + `) w) wc
CROSS JOIN LATERAL (SELECT count(*) AS n FROM alert_events e
                    WHERE e.tenant_id = d.tenant_id AND e.id > d.alert_cursor
                      AND EXISTS (SELECT FROM unnest(d.types) t WHERE t = e.type OR t = 'alert.*')) wa`

// waitingCounted bounds the changes after a destination's cursor that its
// pending count counts, so that reading one paused for long stays quick.
const waitingCounted = "100000"

func scanDestination(row pgx.CollectableRow) (stream.Destination, error) {
	var d stream.Destination
	err := row.Scan(&d.TenantID, &d.ID, &d.Kind, &d.URL, &d.NATSURL, &d.Subject, &d.Provider, &d.ObjectType, &d.Types, &d.Format,
		&d.Filter, &d.Transform, &d.Filtered, &d.AllowPrivate, &d.NATSAuth, &d.NATSTLSCA, &d.MaxInFlight, &d.Status, &d.StatusReason, &d.Cursor, &d.BehindRetention, &d.CreatedAt, &d.LastSuccess,
		&d.Pending, &d.Oldest)
	return d, err
}

const destinationsSQL = `SELECT ` + destinationColumns + `
WHERE d.tenant_id = @tenant_id ORDER BY d.id`

const destinationSQL = `SELECT ` + destinationColumns + `
WHERE d.tenant_id = @tenant_id AND d.id = @id`

// Destinations implements stream.DestinationService.
func (m *Manager) Destinations(ctx context.Context, tenantID int64) ([]stream.Destination, error) {
	rows, err := m.read.Query(ctx, destinationsSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	ds, err := pgx.CollectRows(rows, scanDestination)
	return ds, pg.Translate(err)
}

// Destination implements stream.DestinationService.
func (m *Manager) Destination(ctx context.Context, tenantID, id int64) (stream.Destination, error) {
	return destination(ctx, m.read, tenantID, id)
}

// destination reads one destination with q, a pool or a transaction.
func destination(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, tenantID, id int64) (stream.Destination, error) {
	rows, err := q.Query(ctx, destinationSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id})
	if err != nil {
		return stream.Destination{}, pg.Translate(err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDestination)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, notFound(id)
	}
	return d, pg.Translate(err)
}

func notFound(id int64) error { return pg.NotFound("destination %d not found", id) }

const destinationExistsSQL = `SELECT count(*) FROM destinations WHERE tenant_id = @tenant_id AND id = @id`

// destinationAttemptsSQL lists attempts with the type of what each sent:
// a change (position above zero) or an alert event (below).
const destinationAttemptsSQL = `
SELECT a.id, a.position, a.attempted_at, a.status, coalesce(a.error, ''), a.duration_ms,
       coalesce(CASE WHEN a.position > 0
                THEN (SELECT c.type FROM changes c WHERE c.tenant_id = a.tenant_id AND c.position = a.position)
                ELSE (SELECT e.type FROM alert_events e WHERE e.tenant_id = a.tenant_id AND e.id = a.position - @alert_base) END, '')
FROM destination_attempts a
WHERE a.tenant_id = @tenant_id AND a.destination_id = @id AND a.id < @before_id
ORDER BY a.id DESC LIMIT @limit`

// DestinationAttempts implements stream.DestinationService: newest first,
// paged by attempt id.
func (m *Manager) DestinationAttempts(ctx context.Context, tenantID, id int64, page domain.Page) ([]stream.DestinationAttempt, string, error) {
	var before int64 = math.MaxInt64
	if err := pg.DecodeCursor(page.Cursor, &before); err != nil {
		return nil, "", err
	}
	var n int
	if err := m.read.QueryRow(ctx, destinationExistsSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id}).Scan(&n); err != nil {
		return nil, "", pg.Translate(err)
	}
	if n == 0 {
		return nil, "", notFound(id)
	}
	limit := pg.PageLimit(page)
	rows, err := m.read.Query(ctx, destinationAttemptsSQL,
		pgx.NamedArgs{"tenant_id": tenantID, "id": id, "before_id": before, "limit": limit + 1,
			"alert_base": stream.AlertQueueBase})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	var ids []int64
	attempts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (stream.DestinationAttempt, error) {
		var (
			a          stream.DestinationAttempt
			attemptID  int64
			durationMS int64
		)
		err := row.Scan(&attemptID, &a.Position, &a.At, &a.Status, &a.Error, &durationMS, &a.Type)
		a.ChangeID = stream.AttemptMessageID(tenantID, a.Position)
		a.Duration = time.Duration(durationMS) * time.Millisecond
		ids = append(ids, attemptID)
		return a, err
	})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	attempts, more := pg.Trim(attempts, limit)
	if !more {
		return attempts, "", nil
	}
	return attempts, pg.EncodeCursor(ids[limit-1]), nil
}
