// Package auditlog reads the audit log (domain.AuditService) on the read
// pool; entries are written by pg.Audit in the transaction of each change.
package auditlog

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"errors"
	"fmt"
	"maps"
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

// New returns a Log reading on pools' read pool.
func New(pools pg.Pools) *Log { return &Log{read: pools.ForReads()} }

var _ domain.AuditService = (*Log)(nil)

type auditCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// AuditLog implements domain.AuditService, for the API.
func (s *Log) AuditLog(ctx context.Context, q domain.AuditQuery, page domain.Page) ([]domain.AuditEntry, string, error) {
	page.Before, page.Count = "", 0
	entries, info, err := s.AuditLogPage(ctx, q, page)
	return entries, info.Next, err
}

// auditCountSQL counts, up to @bound, the entries auditLogSQL pages
// through with the same conditions (%s), and how many of them are newer
// than the first of the page shown (@first_, NULL without one).
const auditCountSQL = `
SELECT count(*), count(*) FILTER (WHERE (c.at, c.id) > (@first_at, @first_id))
FROM (
    SELECT a.at, a.id FROM audit_log a
    WHERE true%s
    ORDER BY a.at DESC, a.id DESC
    LIMIT @bound
) c`

// AuditLogPage implements domain.AuditService, on the read pool, for the
// console; a count the read timeout stops is left out.
func (s *Log) AuditLogPage(ctx context.Context, q domain.AuditQuery, page domain.Page) ([]domain.AuditEntry, domain.PageInfo, error) {
	args := pgx.NamedArgs{}
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
	conds := c.SQL("  ")
	keyed, info, err := pg.Both(page, func(after auditCursor, start, newer bool, limit int) ([]pg.Keyed[domain.AuditEntry, auditCursor], error) {
		a := maps.Clone(args)
		a["limit"] = limit + 1
		a["after_at"], a["after_id"] = any(after.At), after.ID
		if !start {
			a["after_at"], a["after_id"] = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, int64(math.MaxInt64)
		} else if after.At.IsZero() {
			return nil, pg.InvalidCursor()
		}
		sql := fmt.Sprintf(auditLogSQL, conds)
		if newer {
			sql = pg.Ascending(sql)
		}
		rows, err := s.read.Query(ctx, sql, a)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (pg.Keyed[domain.AuditEntry, auditCursor], error) {
			var e domain.AuditEntry
			err := row.Scan(&e.ID, &e.At, &e.TenantID, &e.TenantSlug, &e.ActorKind, &e.Actor, &e.Action, &e.Target,
				&e.Summary, &e.ClientAddress)
			return pg.Keyed[domain.AuditEntry, auditCursor]{Row: e, Key: auditCursor{At: e.At, ID: e.ID}}, err
		})
	})
	if err != nil {
		return nil, info, pg.Translate(err)
	}
	if page.Count > 0 {
		a := maps.Clone(args)
		a["bound"] = page.Count + 1
		a["first_at"], a["first_id"] = nil, nil
		if len(keyed) > 0 {
			a["first_at"], a["first_id"] = keyed[0].Key.At, keyed[0].Key.ID
		}
		if err := s.read.QueryRow(ctx, fmt.Sprintf(auditCountSQL, conds), a).Scan(&info.Total, &info.Offset); err != nil && !errors.Is(pg.Translate(err), domain.ErrReadTimeout) {
			return nil, info, pg.Translate(err)
		}
	}
	return pg.Rows(keyed), info, nil
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
	// On Citus, which runs a recursive CTE only within one tenant, each
	// worker reads its shards' actions.
	distributedAuditActionsSQL = `SELECT DISTINCT action FROM audit_log ORDER BY action`
)

// AuditActions implements domain.AuditService.
func (s *Log) AuditActions(ctx context.Context, q domain.AuditQuery) ([]string, error) {
	sql, args := allAuditActionsSQL, []any{}
	if q.AllTenants {
		distributed, err := pg.Distributed(ctx, s.read, "audit_log")
		if err != nil {
			return nil, pg.Translate(err)
		}
		if distributed {
			sql = distributedAuditActionsSQL
		}
	} else {
		sql, args = tenantAuditActionsSQL, []any{pgx.NamedArgs{"tenant_id": q.TenantID}}
	}
	rows, err := s.read.Query(ctx, sql, args...)
	if err != nil {
		return nil, pg.Translate(err)
	}
	actions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return actions, pg.Translate(err)
}
