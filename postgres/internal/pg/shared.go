package pg

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
)

// Querier runs a statement on a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// OverviewFoldGrace is how long after its end an hour counts as closed: a
// delivery stamped before the hour ended may still be committing (ingest
// allows itself 5 seconds), and app nodes' clocks may differ a little. The
// overview folds closed hours; reconciliation checks their counters.
const OverviewFoldGrace = 15 * time.Minute

// NegInfinity and PosInfinity bound a timestamptz cursor before the first
// and after the last row.
func NegInfinity() pgtype.Timestamptz {
	return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
}

// PosInfinity: see NegInfinity.
func PosInfinity() pgtype.Timestamptz {
	return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
}

// NullString is s, or NULL when empty.
func NullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NullJSON is b as text, or NULL when empty.
func NullJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// LatestRevisionTime stands for any revision time past it, which PostgreSQL
// could not store (a HubSpot occurredAt can name the year 292 million).
var LatestRevisionTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// UTCDay is the start of t's day in UTC.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

const insertAuditSQL = `INSERT INTO audit_log (tenant_id, actor_kind, actor, action, target, summary, client_address)
VALUES (@tenant_id, @actor_kind, @actor, @action, @target, @summary, @client_address)`

// Audit records a change in tx, the transaction that makes it, so that the
// entry exists exactly when the change does. The actor comes from ctx; a
// change without one is refused rather than left unrecorded. tenantID is 0
// for changes outside any tenant. summary must never hold a secret.
func Audit(ctx context.Context, tx pgx.Tx, tenantID int64, action, target, summary string) error {
	a, ok := domain.ActorFrom(ctx)
	if !ok {
		return domain.Errorf(domain.EINTERNAL, "change %s on %q has no actor to record", action, target)
	}
	_, err := tx.Exec(ctx, insertAuditSQL, pgx.NamedArgs{
		"tenant_id": tenantID, "actor_kind": a.Kind, "actor": a.Name, "action": action,
		"target": target, "summary": summary, "client_address": a.Address,
	})
	return err
}

// lockProviderSQL serialises the changes of one provider's secrets and
// settings. NO KEY UPDATE lets ingest's foreign-key checks (KEY SHARE) on
// the provider go on meanwhile.
const lockProviderSQL = `SELECT name FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id FOR NO KEY UPDATE`

// LockProvider locks the provider's row for the rest of tx and returns its
// name, or ENOTFOUND.
func LockProvider(ctx context.Context, tx pgx.Tx, tenantID, providerID int64) (string, error) {
	var name string
	err := tx.QueryRow(ctx, lockProviderSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", NotFound("provider not found")
	}
	return name, Translate(err)
}

// notifyEndpointsSQL names the channel every node's endpoint cache LISTENs
// on (postgres/ingest/listen.go); the payload is the tenant's id.
const notifyEndpointsSQL = `SELECT pg_notify('tidemark_endpoints', @tenant_id::text)`

// NotifyEndpoints tells every node to drop the tenant's cached endpoints
// once q's transaction commits (at once, outside one). Every change to a
// tenant, its providers, their secrets or scopes calls it. It is a call in
// the write path rather than a trigger because on Citus a trigger fires on
// the worker holding the shard, whose notifications no node hears.
func NotifyEndpoints(ctx context.Context, q Querier, tenantID int64) error {
	_, err := q.Exec(ctx, notifyEndpointsSQL, pgx.NamedArgs{"tenant_id": strconv.FormatInt(tenantID, 10)})
	return err
}

// distributedSQL tells whether table is a Citus table; pg_dist_partition
// exists only where the citus extension does.
const distributedSQL = `SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`

const distributedTableSQL = `SELECT EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = to_regclass(@table))`

// Distributed reports whether table is distributed by Citus (or one of its
// reference tables), for the few statements Citus runs differently.
func Distributed(ctx context.Context, q Querier, table string) (bool, error) {
	var citus bool
	if err := q.QueryRow(ctx, distributedSQL).Scan(&citus); err != nil || !citus {
		return false, err
	}
	err := q.QueryRow(ctx, distributedTableSQL, pgx.NamedArgs{"table": table}).Scan(&citus)
	return citus, err
}

const nowSQL = `SELECT now()`

// Now is the database's now(): a transaction's start when q is one. It is
// passed as a parameter to statements Citus refuses now() in (beside a
// column, in a CASE or a coalesce).
func Now(ctx context.Context, q Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, nowSQL).Scan(&now)
	return now, Translate(err)
}
