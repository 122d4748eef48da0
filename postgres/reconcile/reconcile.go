// Package reconcile checks the invariants of the stored data
// (reconciliation.Invariants), stores the nightly report and exports it to
// Prometheus.
package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Reconciliation: one statement per invariant (reconciliation.Invariants), each
// set-based over the whole of what it checks of one tenant (@tenant_id,
// on every table), run for one tenant or for each in turn. Each finds its
// violations as rows (tenant_id, provider_id, object_type, object_id,
// subject, detail) of a CTE named found, which reconcileFound turns into
// the answer.
//
// Retention removes history (accepted revisions, resolved conflicts,
// event-log partitions), so each statement compares only what retention
// keeps: the latest accepted revision of every record (per property), the
// counters of hours whose log partition still exists, and the retained
// count of removed revisions (pruned_revisions).

// Reconciler runs reconciliations on connections of its own, configured as
// pool's, and reads the stored report on the read pool.
type Reconciler struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool // LastReconciliation's, and so the metrics'
	log  *slog.Logger
}

// New returns a Reconciler on pools that logs to log.
func New(pools pg.Pools, log *slog.Logger) *Reconciler {
	return &Reconciler{pool: pools.Write, read: pools.ForReads(), log: log}
}

// reconcileFound answers each violation with its tenant's slug and its
// provider's name (an id when they were deleted), in a stable order, with
// the number of all of them before the LIMIT (NULL: no limit).
const reconcileFound = `
-- the end of every reconciliation statement
SELECT coalesce(t.slug, '#' || f.tenant_id), coalesce(p.name, '#' || f.provider_id, ''), coalesce(f.object_type, ''),
       coalesce(f.object_id, ''), f.subject, f.detail,
       count(*) OVER ()
FROM found f
LEFT JOIN tenants t ON t.id = f.tenant_id
LEFT JOIN providers p ON p.tenant_id = @tenant_id AND p.id = f.provider_id
ORDER BY 1, 2, 3, 4, 5, 6
LIMIT @limit`

// reconcileLatest is the highest accepted revision of each record, and of
// each property of a per-property record (property NULL for the others);
// of two at one revision, the later, which an operator adopted. History
// retention always keeps these rows. A reset record (postgres/repair.go)
// is compared only with the revisions accepted after its reset (not
// marked before_reset).
const reconcileLatest = `latest AS (
    SELECT DISTINCT ON (tenant_id, provider_id, object_type, object_id, property)
           tenant_id, provider_id, object_type, object_id, property, revision, snapshot, event_id, id
    FROM accepted_revisions a
    WHERE tenant_id = @tenant_id AND NOT before_reset
    ORDER BY tenant_id, provider_id, object_type, object_id, property, revision DESC, applied_at DESC, id DESC
), props AS (
    -- The latest accepted revision of each property of a merged record: a
    -- whole snapshot replaced the record (postgres/internal/pg/records.go),
    -- so the properties' own applied before the latest whole one no longer
    -- count (ids follow the order in which one record's revisions were
    -- applied: each waits for the record's row lock), and the fields it
    -- held count at its revision.
    SELECT DISTINCT ON (tenant_id, provider_id, object_type, object_id, property) *
    FROM (
        SELECT p.tenant_id, p.provider_id, p.object_type, p.object_id, p.property, p.revision, p.snapshot, p.event_id
        FROM latest p
        LEFT JOIN latest w ON w.tenant_id = p.tenant_id AND w.provider_id = p.provider_id AND w.object_type = p.object_type
            AND w.object_id = p.object_id AND w.property IS NULL
        WHERE p.property IS NOT NULL AND (w.id IS NULL OR p.id > w.id)
        UNION ALL
        SELECT w.tenant_id, w.provider_id, w.object_type, w.object_id, k, w.revision, w.snapshot, w.event_id
        FROM latest w, jsonb_object_keys(CASE WHEN jsonb_typeof(w.snapshot) = 'object' THEN w.snapshot ELSE '{}' END) k
        WHERE w.property IS NULL
    ) own_or_whole
    ORDER BY tenant_id, provider_id, object_type, object_id, property, revision DESC
)`

// A record's revision is its highest accepted revision. A per-property
// record (property_revisions not empty, see applyPropertySQL) is checked
// per property, both ways, and as a whole: its revision is the highest of
// its properties' and its deletion the highest accepted one.
const reconcileRecordRevisionSQL = `
WITH ` + reconcileLatest + `, stored AS (
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, kv.key AS property, kv.value::bigint AS revision
    FROM records r, jsonb_each_text(r.property_revisions) kv
    WHERE r.tenant_id = @tenant_id
), found AS (
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '' AS subject,
           CASE WHEN l.revision IS NULL THEN format('revision %s, but no accepted revision of the record is kept', r.revision)
                ELSE format('revision %s, but its highest accepted revision is %s (event %s)', r.revision, l.revision, l.event_id)
           END AS detail
    FROM records r
    LEFT JOIN latest l ON l.tenant_id = r.tenant_id AND l.provider_id = r.provider_id AND l.object_type = r.object_type
        AND l.object_id = r.object_id AND l.property IS NULL
    WHERE r.tenant_id = @tenant_id AND r.property_revisions = '{}'
      AND r.revision IS DISTINCT FROM l.revision
      -- reset (revision -1, domain.ForgottenRevision) and no event applied since
      AND NOT (r.revision = -1 AND r.reset_at IS NOT NULL AND l.revision IS NULL)
    UNION ALL
    SELECT coalesce(s.tenant_id, l.tenant_id), coalesce(s.provider_id, l.provider_id),
           coalesce(s.object_type, l.object_type), coalesce(s.object_id, l.object_id), '',
           CASE WHEN l.revision IS NULL
                THEN format('property %s at revision %s, but no accepted revision of it is kept', s.property, s.revision)
                WHEN s.revision IS NULL
                THEN format('property %s has no revision, but its revision %s was accepted (event %s)', l.property, l.revision, l.event_id)
                ELSE format('property %s at revision %s, but its highest accepted revision is %s (event %s)',
                            s.property, s.revision, l.revision, l.event_id)
           END
    FROM stored s
    FULL JOIN props l
        ON l.tenant_id = s.tenant_id AND l.provider_id = s.provider_id AND l.object_type = s.object_type
       AND l.object_id = s.object_id AND l.property = s.property
    WHERE s.revision IS DISTINCT FROM l.revision
      AND (s.tenant_id IS NOT NULL OR EXISTS (
          SELECT FROM records r WHERE r.tenant_id = @tenant_id AND r.provider_id = l.provider_id
             AND r.object_type = l.object_type AND r.object_id = l.object_id AND r.property_revisions <> '{}'))
    UNION ALL
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '',
           CASE WHEN r.revision IS DISTINCT FROM max(l.revision)
                THEN format('revision %s, but the highest accepted revision of its properties is %s', r.revision, max(l.revision))
                ELSE format('deleted at revision %s, but the highest accepted deletion is %s', coalesce(r.deleted_revision::text, 'none'),
                            coalesce(d.revision::text, 'none'))
           END
    FROM records r
    LEFT JOIN props l ON l.tenant_id = r.tenant_id AND l.provider_id = r.provider_id AND l.object_type = r.object_type
        AND l.object_id = r.object_id
    -- A deletion counts however whole snapshots came after it: the record
    -- keeps its deletion's revision (undeleted, it is newer than it).
    LEFT JOIN latest d ON d.tenant_id = r.tenant_id AND d.provider_id = r.provider_id AND d.object_type = r.object_type
        AND d.object_id = r.object_id AND d.property = '` + domain.PropertyDeleted + `'
    WHERE r.tenant_id = @tenant_id AND r.property_revisions <> '{}'
    GROUP BY r.tenant_id, r.provider_id, r.object_type, r.object_id, r.revision, r.deleted_revision, d.revision
    HAVING r.revision IS DISTINCT FROM max(l.revision) OR r.deleted_revision IS DISTINCT FROM d.revision
)` + reconcileFound

// A record's snapshot is its highest accepted revision's. For a
// per-property record, whose accepted revisions each hold the snapshot
// merged at the time, each property's value is the one its highest
// accepted revision set, and no value lacks an accepted revision. The
// pseudo-properties of creation and deletion carry no value.
const reconcileRecordSnapshotSQL = `
WITH ` + reconcileLatest + `, found AS (
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '' AS subject,
           format('snapshot %s, but revision %s was accepted as %s (event %s)', left(r.snapshot::text, 200),
                  l.revision, left(l.snapshot::text, 200), l.event_id) AS detail
    FROM records r
    JOIN latest l ON l.tenant_id = r.tenant_id AND l.provider_id = r.provider_id AND l.object_type = r.object_type
        AND l.object_id = r.object_id AND l.property IS NULL
    WHERE r.tenant_id = @tenant_id AND r.property_revisions = '{}'
      AND r.snapshot <> l.snapshot
    UNION ALL
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '',
           format('property %s is %s, but its revision %s was accepted as %s (event %s)', l.property,
                  coalesce(left((r.snapshot -> l.property)::text, 200), 'absent'), l.revision,
                  coalesce(left((l.snapshot -> l.property)::text, 200), 'absent'), l.event_id)
    FROM records r
    JOIN props l ON l.tenant_id = r.tenant_id AND l.provider_id = r.provider_id AND l.object_type = r.object_type
        AND l.object_id = r.object_id AND l.property NOT LIKE '$%'
    WHERE r.tenant_id = @tenant_id AND r.property_revisions <> '{}'
      AND (r.snapshot -> l.property) IS DISTINCT FROM (l.snapshot -> l.property)
    UNION ALL
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '',
           format('property %s is %s, but no accepted revision of it is kept', kv.key, left(kv.value::text, 200))
    FROM records r, jsonb_each(r.snapshot) kv
    WHERE r.tenant_id = @tenant_id AND r.property_revisions <> '{}'
      -- any accepted revision, before a reset too: a reset keeps the snapshot
      AND NOT EXISTS (SELECT FROM accepted_revisions a WHERE a.tenant_id = @tenant_id AND a.provider_id = r.provider_id
                      AND a.object_type = r.object_type AND a.object_id = r.object_id
                      AND (a.property = kv.key OR (a.property IS NULL AND jsonb_typeof(a.snapshot) = 'object' AND a.snapshot ? kv.key)))
)` + reconcileFound

// A record's application count is the number of its accepted revisions:
// every application (an event's, an operator's adoption) adds one of each,
// and history retention counts what it removes in pruned_revisions.
const reconcileApplicationCountSQL = `
WITH kept AS (
    SELECT tenant_id, provider_id, object_type, object_id, count(*) AS n
    FROM accepted_revisions
    WHERE tenant_id = @tenant_id
    GROUP BY 1, 2, 3, 4
), found AS (
    SELECT r.tenant_id, r.provider_id, r.object_type, r.object_id, '' AS subject,
           format('application count %s, but %s accepted revisions (%s kept, %s removed by history retention)',
                  r.application_count, coalesce(k.n, 0) + coalesce(p.n, 0), coalesce(k.n, 0), coalesce(p.n, 0)) AS detail
    FROM records r
    LEFT JOIN kept k ON k.tenant_id = r.tenant_id AND k.provider_id = r.provider_id AND k.object_type = r.object_type
        AND k.object_id = r.object_id
    LEFT JOIN pruned_revisions p ON p.tenant_id = @tenant_id AND p.provider_id = r.provider_id
        AND p.object_type = r.object_type AND p.object_id = r.object_id
    WHERE r.tenant_id = @tenant_id
      AND r.application_count <> coalesce(k.n, 0) + coalesce(p.n, 0)
)` + reconcileFound

// No two applied events share an idempotency key within its TTL. The log
// keeps no key, and the key is sha256 of (tenant, provider, object type,
// action, identifier) (domain.IdempotencyKey), so two events share one
// exactly when they share those and the identifier their scope's rule
// derives (domain.IdentifierRule.Identifier), which is rebuilt here from
// the logged columns:
//   - event_id: the event id, exactly;
//   - object_id+fields: the object id and each named snapshot field,
//     present or not, compared as jsonb, which is how Go compares their
//     canonical JSON except for numbers beyond float64's precision;
//   - object_id+timestamp: the provider's timestamp is not logged (it is
//     in the raw payload, in the kind's own format), so events are paired
//     by object id and identical raw payload: every pair found shares a
//     key, though two payloads differing only elsewhere are not paired.
//
// A scope's rule and TTL apply as they are now only to events received
// after its last change (scopes.updated_at, plus @margin_seconds for nodes
// whose cache has not heard of it yet). A claim expires on the database's
// clock while received_at is the receiving node's, so two applications
// count as within the TTL when they are received more than
// @margin_seconds less than it apart.
const reconcileIdempotencySQL = `
WITH applied AS (
    -- The identifier in three parts: text, the object id, snapshot fields.
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.action, e.event_id, e.delivery_id, e.received_at, s.ttl_seconds,
           CASE WHEN s.identifier_rule IN ('', 'event_id') THEN e.event_id
                WHEN s.identifier_rule = 'object_id+timestamp' THEN encode(sha256(e.payload), 'hex')
           END AS identity,
           CASE WHEN s.identifier_rule NOT IN ('', 'event_id') THEN e.object_id END AS identity_object,
           CASE WHEN s.identifier_rule LIKE 'object_id+fields:%' THEN (
                    SELECT jsonb_agg(jsonb_build_array(e.snapshot ? btrim(f), e.snapshot -> btrim(f)) ORDER BY n)
                    FROM unnest(string_to_array(substr(s.identifier_rule, length('object_id+fields:') + 1), ',')) WITH ORDINALITY AS u (f, n)
                    WHERE btrim(f) <> '')
           END AS fields
    FROM events e
    JOIN scopes s ON s.tenant_id = @tenant_id AND s.provider_id = e.provider_id AND s.object_type = e.object_type
        AND s.action = e.action
    WHERE e.tenant_id = @tenant_id AND e.outcome = 'applied'
      AND e.payload IS NOT NULL -- an erased event's identifier cannot be rebuilt
      AND (s.updated_at = s.created_at OR e.received_at > s.updated_at + make_interval(secs => @margin_seconds::float8))
), paired AS (
    SELECT *, lag(event_id) OVER w AS first_event, lag(delivery_id) OVER w AS first_delivery, lag(received_at) OVER w AS first_at
    FROM applied
    WINDOW w AS (PARTITION BY tenant_id, provider_id, object_type, action, identity, identity_object, fields ORDER BY received_at, delivery_id)
), found AS (
    SELECT tenant_id, provider_id, object_type, object_id, 'event ' || event_id || ' (' || object_type || '.' || action || ')' AS subject,
           format('applied at %s (delivery %s), %s after event %s was applied (delivery %s) with the same idempotency key; its TTL is %s',
                  received_at, delivery_id, received_at - first_at, first_event, first_delivery, make_interval(secs => ttl_seconds)) AS detail
    FROM paired
    WHERE first_at IS NOT NULL
      AND received_at - first_at < make_interval(secs => ttl_seconds - @margin_seconds::float8)
)` + reconcileFound

// The outcome counters of a closed hour (before @closed_before) equal the
// event log's counts of that hour, for the UTC days whose log partition is
// still attached: retention drops a whole day of log and keeps its
// counters. Refused deliveries (domain.DeliveryRejected) are counted
// without being logged, so they are left out.
const reconcileOutcomeCountersSQL = `
WITH days AS (
    SELECT to_date(right(c.relname, 8), 'YYYYMMDD')::timestamp AT TIME ZONE 'UTC' AS day
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'events'::regclass AND NOT i.inhdetachpending AND c.relname ~ '^events_p[0-9]{8}$'
), counted AS (
    SELECT tenant_id, provider_id, bucket, outcome, sum(n) AS n
    FROM outcome_counters
    WHERE tenant_id = @tenant_id AND outcome <> '` + domain.DeliveryRejected + `'
      AND bucket < @closed_before AND date_trunc('day', bucket, 'UTC') IN (SELECT day FROM days)
    GROUP BY 1, 2, 3, 4
), logged AS (
    SELECT tenant_id, provider_id, date_trunc('hour', received_at, 'UTC') AS bucket, outcome, count(*) AS n
    FROM events
    WHERE tenant_id = @tenant_id
      AND received_at < @closed_before AND date_trunc('day', received_at, 'UTC') IN (SELECT day FROM days)
    GROUP BY 1, 2, 3, 4
), found AS (
    SELECT coalesce(c.tenant_id, l.tenant_id) AS tenant_id, coalesce(c.provider_id, l.provider_id) AS provider_id,
           NULL AS object_type, NULL AS object_id,
           to_char(coalesce(c.bucket, l.bucket) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:00 "UTC"') || ' ' || coalesce(c.outcome, l.outcome) AS subject,
           format('counters %s, event log %s', coalesce(c.n, 0), coalesce(l.n, 0)) AS detail
    FROM counted c
    FULL JOIN logged l ON l.tenant_id = c.tenant_id AND l.provider_id = c.provider_id AND l.bucket = c.bucket
        AND l.outcome = c.outcome
    WHERE coalesce(c.n, 0) <> coalesce(l.n, 0)
)` + reconcileFound

// Every open conflict names an existing record (a resolved one may outlive
// its record).
const reconcileConflictRecordSQL = `
WITH found AS (
    SELECT c.tenant_id, c.provider_id, c.object_type, c.object_id, 'conflict ' || c.id AS subject,
           format('open conflict at revision %s (events %s and %s) names a record that does not exist',
                  c.revision, c.accepted_event_id, c.conflicting_event_id) AS detail
    FROM conflicts c
    WHERE c.tenant_id = @tenant_id AND c.status = 'open'
      AND NOT EXISTS (SELECT FROM records r WHERE r.tenant_id = @tenant_id AND r.provider_id = c.provider_id
                      AND r.object_type = c.object_type AND r.object_id = c.object_id)
)` + reconcileFound

// No person and no account is duplicated: the unique key is on the email
// (the domain) as stored, and signups store it trimmed and lower-cased
// (domain.NormalizeEmail), so two rows whose keys differ only in case or
// surrounding spaces are one stored twice. %[1]s is the table, %[2]s its
// key, %[3]s what the key is called.
const reconcileDuplicateSQL = `
WITH found AS (
    SELECT tenant_id, NULL::bigint AS provider_id, NULL AS object_type, NULL AS object_id, '%[2]s ' || lower(btrim(%[2]s)) AS subject,
           format('%[1]s %%s share this %[3]s (stored as %%s)', string_agg(id::text, ', ' ORDER BY id),
                  string_agg(%[2]s, ', ' ORDER BY id)) AS detail
    FROM %[1]s
    WHERE tenant_id = @tenant_id
    GROUP BY tenant_id, lower(btrim(%[2]s))
    HAVING count(*) > 1
)` + reconcileFound

// reconcileChecks pairs each invariant with its statement, in report order.
var reconcileChecks = []struct {
	invariant reconciliation.Invariant
	sql       string
}{
	{reconciliation.InvariantRecordRevision, reconcileRecordRevisionSQL},
	{reconciliation.InvariantRecordSnapshot, reconcileRecordSnapshotSQL},
	{reconciliation.InvariantApplicationCount, reconcileApplicationCountSQL},
	{reconciliation.InvariantIdempotency, reconcileIdempotencySQL},
	{reconciliation.InvariantOutcomeCounters, reconcileOutcomeCountersSQL},
	{reconciliation.InvariantConflictRecord, reconcileConflictRecordSQL},
	{reconciliation.InvariantDuplicatePerson, fmt.Sprintf(reconcileDuplicateSQL, "people", "email", "email address")},
	{reconciliation.InvariantDuplicateAccount, fmt.Sprintf(reconcileDuplicateSQL, "accounts", "domain", "domain")},
}

// reconcileMargin allows for the clocks of the receiving nodes and the
// database, and for a node's endpoint cache, in the idempotency check.
const reconcileMargin = 5 * time.Minute

// reconcileClosedAfter is how long after its end an hour counts as closed,
// as for the overview's fold (pg.OverviewFoldGrace): a delivery stamped in it
// may still be committing.
const reconcileClosedAfter = pg.OverviewFoldGrace

const (
	reconcileTenantSQL     = `SELECT id, slug FROM tenants WHERE id = @tenant_id`
	reconcileAllTenantsSQL = `SELECT id, slug FROM tenants ORDER BY slug`
	// The checks run in one snapshot, with no statement timeout: they read
	// whole tables, and the caller's context bounds them.
	reconcileNoTimeoutSQL = `SELECT set_config('statement_timeout', '0', true)`
)

type tenantRef struct {
	id   int64
	slug string
}

// reconciledTenants is tenant tenantID, or with 0 every tenant in the
// order of their slugs, the order of the report. Each check runs tenant by
// tenant, its statement filtered by @tenant_id on every table, so that on
// Citus it goes to the tenant's worker (docs/scale.md). An unknown tenant
// is an ENOTFOUND error.
func reconciledTenants(ctx context.Context, tx pgx.Tx, tenantID int64) ([]tenantRef, error) {
	sql := reconcileAllTenantsSQL
	if tenantID != 0 {
		sql = reconcileTenantSQL
	}
	rows, err := tx.Query(ctx, sql, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	tenants, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (tenantRef, error) {
		var t tenantRef
		return t, row.Scan(&t.id, &t.slug)
	})
	if err == nil && tenantID != 0 && len(tenants) == 0 {
		return nil, pg.NotFound("tenant %d not found", tenantID)
	}
	return tenants, pg.Translate(err)
}

// runCheck runs one check's statement for tenant and answers its
// violations, at most room of them (room < 0: all), and how many the
// tenant has in all.
func runCheck(ctx context.Context, tx pgx.Tx, invariant reconciliation.Invariant, sql string, args pgx.NamedArgs, tenant int64,
	room int) ([]reconciliation.Violation, int64, error) {
	args["tenant_id"] = tenant
	rows, err := tx.Query(ctx, sql, args)
	if err != nil {
		return nil, 0, err
	}
	var (
		found []reconciliation.Violation
		v     = reconciliation.Violation{Invariant: invariant}
		total int64
	)
	_, err = pgx.ForEachRow(rows, []any{&v.Tenant, &v.Provider, &v.ObjectType, &v.ObjectID, &v.Subject, &v.Detail, &total}, func() error {
		if room < 0 || len(found) < room {
			found = append(found, v)
		}
		return nil
	})
	return found, total, err
}

// Reconcile implements reconciliation.Service. It runs on a
// connection of its own, so that neither the read pool's statement timeout
// nor a busy ingest pool is in its way, in one read-only transaction, so
// that every check sees the same instant. An unknown tenant is an
// ENOTFOUND error.
func (rc *Reconciler) Reconcile(ctx context.Context, tenantID int64, limit int) (reconciliation.Report, error) {
	conn, err := rc.ownConn(ctx, "tidemark reconciliation")
	if err != nil {
		return reconciliation.Report{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return reconcileOn(ctx, conn, tenantID, limit, time.Now())
}

// ownConn opens a connection outside the pools, configured as the ingest
// pool's and named app in pg_stat_activity.
func (rc *Reconciler) ownConn(ctx context.Context, app string) (*pgx.Conn, error) {
	cfg := rc.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(ctx, cfg)
	return conn, pg.Translate(err)
}

func reconcileOn(ctx context.Context, conn *pgx.Conn, tenantID int64, limit int, now time.Time) (reconciliation.Report, error) {
	r := reconciliation.Report{StartedAt: now, Counts: map[reconciliation.Invariant]int64{}}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return r, pg.Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, reconcileNoTimeoutSQL); err != nil {
		return r, pg.Translate(err)
	}
	args := pgx.NamedArgs{"limit": nil, "margin_seconds": reconcileMargin.Seconds(),
		"closed_before": now.Add(-reconcileClosedAfter).Truncate(time.Hour)}
	if limit > 0 {
		args["limit"] = limit
	}
	tenants, err := reconciledTenants(ctx, tx, tenantID)
	if err != nil {
		return r, err
	}
	if tenantID != 0 {
		r.Tenant = tenants[0].slug
	}
	for _, check := range reconcileChecks {
		var total int64
		room := -1 // the violations this check may still add to the report
		if limit > 0 {
			room = limit
		}
		for _, t := range tenants {
			found, n, err := runCheck(ctx, tx, check.invariant, check.sql, args, t.id, room)
			if err != nil {
				return r, fmt.Errorf("check %s: %w", check.invariant, pg.Translate(err))
			}
			r.Violations, total = append(r.Violations, found...), total+n
			if room > 0 {
				room -= len(found)
			}
		}
		r.Counts[check.invariant] = total
	}
	r.FinishedAt = time.Now()
	return r, nil
}

var _ reconciliation.Service = (*Reconciler)(nil)
