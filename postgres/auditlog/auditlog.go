// Package auditlog reads the audit log (domain.AuditService) on the read
// pool; entries are written by pg.Audit in the transaction of each change.
package auditlog

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// auditLogSQL pages through the log newest first. %s holds the filters in
// use, each combination its own statement planned for exactly those
// filters (as eventLogSQL does). Admins list every tenant's entries and
// those outside any tenant; everyone else gets auditLogTenant.
const auditLogSQL = `
SELECT a.id, a.at, a.tenant_id, coalesce(t.slug, ''), a.actor_kind, a.actor, a.action, a.target, a.summary, a.client_address
FROM audit_log a LEFT JOIN tenants t ON t.id = a.tenant_id
WHERE (a.at, a.id) < (@after_at, @after_id)%s
ORDER BY a.at DESC, a.id DESC
LIMIT @limit`

const (
	auditLogTenant = `a.tenant_id = @tenant_id`
	auditLogActor  = `a.actor = @actor`
	auditLogAction = `a.action = @action`
	auditLogFrom   = `a.at >= @from`
	auditLogBefore = `a.at < @before`
)

// Log reads the audit log.
type Log struct {
	read *pgxpool.Pool
}

// New returns a Log reading on pool until UseReadPool gives it the reads'.
func New(pool *pgxpool.Pool) *Log { return &Log{read: pool} }

// UseReadPool makes the log's reads use p.
func (s *Log) UseReadPool(p *pgxpool.Pool) { s.read = p }

var _ domain.AuditService = (*Log)(nil)

type auditCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// AuditLog implements domain.AuditService, on the read pool.
func (s *Log) AuditLog(ctx context.Context, q domain.AuditQuery, page domain.Page) ([]domain.AuditEntry, string, error) {
	var after auditCursor
	args := pgx.NamedArgs{"after_at": pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true},
		"after_id": int64(math.MaxInt64)}
	if page.Cursor != "" {
		if err := pg.DecodeCursor(page.Cursor, &after); err != nil || after.At.IsZero() {
			return nil, "", pg.InvalidCursor()
		}
		args["after_at"], args["after_id"] = after.At, after.ID
	}
	limit := pg.PageLimit(page)
	args["limit"] = limit + 1
	c := pg.NewConds(args)
	if !q.AllTenants {
		c.Add(auditLogTenant, "tenant_id", q.TenantID)
	}
	if q.Actor != "" {
		c.Add(auditLogActor, "actor", q.Actor)
	}
	if q.Action != "" {
		c.Add(auditLogAction, "action", q.Action)
	}
	if !q.From.IsZero() {
		c.Add(auditLogFrom, "from", q.From)
	}
	if !q.Before.IsZero() {
		c.Add(auditLogBefore, "before", q.Before)
	}
	rows, err := s.read.Query(ctx, fmt.Sprintf(auditLogSQL, c.SQL("  ")), args)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AuditEntry, error) {
		var e domain.AuditEntry
		return e, row.Scan(&e.ID, &e.At, &e.TenantID, &e.TenantSlug, &e.ActorKind, &e.Actor, &e.Action, &e.Target,
			&e.Summary, &e.ClientAddress)
	})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	entries, more := pg.Trim(entries, limit)
	if !more {
		return entries, "", nil
	}
	last := entries[len(entries)-1]
	return entries, pg.EncodeCursor(auditCursor{At: last.At, ID: last.ID}), nil
}

// The actions recorded, by a skip scan of the action indexes: one index
// probe per distinct action rather than a read of the whole log.
const (
	tenantAuditActionsSQL = `
WITH RECURSIVE a(action) AS (
    (SELECT action FROM audit_log WHERE tenant_id = @tenant_id ORDER BY action LIMIT 1)
    UNION ALL
    SELECT (SELECT l.action FROM audit_log l WHERE l.tenant_id = @tenant_id AND l.action > a.action ORDER BY l.action LIMIT 1)
    FROM a WHERE a.action IS NOT NULL
)
SELECT action FROM a WHERE action IS NOT NULL`
	allAuditActionsSQL = `
WITH RECURSIVE a(action) AS (
    (SELECT action FROM audit_log ORDER BY action LIMIT 1)
    UNION ALL
    SELECT (SELECT l.action FROM audit_log l WHERE l.action > a.action ORDER BY l.action LIMIT 1)
    FROM a WHERE a.action IS NOT NULL
)
SELECT action FROM a WHERE action IS NOT NULL`
)

// AuditActions implements domain.AuditService.
func (s *Log) AuditActions(ctx context.Context, q domain.AuditQuery) ([]string, error) {
	sql, args := allAuditActionsSQL, []any{}
	if !q.AllTenants {
		sql, args = tenantAuditActionsSQL, []any{pgx.NamedArgs{"tenant_id": q.TenantID}}
	}
	rows, err := s.read.Query(ctx, sql, args...)
	if err != nil {
		return nil, pg.Translate(err)
	}
	actions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return actions, pg.Translate(err)
}
