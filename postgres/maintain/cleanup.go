// Package maintain runs the maintenance pass over the whole database: the
// daily partitions of the logs, their retention, expired keys and the
// history past its retention.
package maintain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Maintenance: one pass (Cleanup) every hour from serve, or from
// `tidemark cleanup`. A pass keeps the daily partitions of the logs ahead
// (partitions.go), drops the ones past retention, deletes
// expired idempotency keys, the history past its retention
// (history_retention.go) and audit entries past domain.AuditRetention.
//
// Every statement in this file and in partitions.go is cross-tenant
// by nature and so carries no tenant filter: key expiry, partition
// management, retention and largestTTLSQL (the largest scope TTL of any
// tenant, which the retention check needs) apply to all tenants at once and
// touch no tenant's live data.
//
// Routine maintenance never makes ingest wait:
//   - A pass runs on a connection of its own that holds a session advisory
//     lock for the whole pass; a process that cannot take it skips the pass,
//     so several serve processes take turns.
//   - The connection's lock_timeout is short: a step that would wait longer
//     gives up, is reported in Report.Deferred, and the next pass
//     retries it. statement_timeout bounds every statement as a whole.
//   - On the logs themselves it asks only for locks that ingest's never
//     conflict with (see partitions.go), so no ingest statement ever
//     queues behind maintenance, not even for the lock_timeout.

// Maintainer runs maintenance passes on the database of pool.
type Maintainer struct {
	pool             *pgxpool.Pool
	historyRetention time.Duration // see SetHistoryRetention
}

// New returns a Maintainer on pools' write pool.
func New(pools pg.Pools) *Maintainer { return &Maintainer{pool: pools.Write} }

// maintenanceLockKey is the session advisory lock a pass holds, so that one
// process at a time maintains the database ("tidemark" in ASCII).
const maintenanceLockKey int64 = 0x746964656d61726b

// maintenanceApp names a pass's connection in pg_stat_activity.
const maintenanceApp = "tidemark maintenance"

// How long a maintenance statement may wait for a lock, and how long it
// may run in all. Since nothing ingest does ever waits behind these
// requests, the lock timeout only bounds the pass: DETACH ... CONCURRENTLY
// waits for every transaction that has the log open, ingest's included,
// and a second rides out a slow delivery while a long reader still makes
// the step give up.
// A step that takes ACCESS EXCLUSIVE on a partition some delivery may
// still lock gives up sooner, since that delivery would wait behind it.
const (
	maintenanceLockTimeout          = "1s"
	maintenanceExclusiveLockTimeout = "100ms"
	maintenanceStatementTimeout     = "60s"
)

// cleanupBatch bounds every DELETE of a pass, so that each one is a short
// statement that holds its row locks briefly.
const cleanupBatch = 1000

const (
	tryMaintenanceLockSQL  = `SELECT pg_try_advisory_lock(@key)`
	waitMaintenanceLockSQL = `SELECT pg_advisory_lock(@key)`
	unlockMaintenanceSQL   = `SELECT pg_advisory_unlock(@key)`
	maintenanceTimeoutsSQL = `SELECT set_config('lock_timeout', @lock_timeout, false), set_config('statement_timeout', @statement_timeout, false)`
	setLockTimeoutSQL      = `SELECT set_config('lock_timeout', @lock_timeout, false)`
)

// largestTTLSQL finds the longest-remembered scope of any tenant: a
// maintenance query across tenants, for the retention check.
const largestTTLSQL = `
SELECT s.ttl_seconds, t.slug, p.name, s.object_type, s.action
FROM scopes s
JOIN tenants t ON t.id = s.tenant_id
JOIN providers p ON p.tenant_id = s.tenant_id AND p.id = s.provider_id
ORDER BY s.ttl_seconds DESC, t.slug, p.name, s.object_type, s.action
LIMIT 1`

// deleteExpiredKeys deletes the expired idempotency keys in batches: of
// every tenant at once, or, on Citus, which locks no rows across shards,
// of one tenant after another.
func (m *pass) deleteExpiredKeys(ctx context.Context, batch int) (int64, error) {
	if !m.distributed {
		return execBatches(ctx, m.conn, deleteExpiredKeysSQL, pgx.NamedArgs{"limit": batch})
	}
	rows, err := m.conn.Query(ctx, tenantIDsSQL)
	if err != nil {
		return 0, pg.Translate(err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, pg.Translate(err)
	}
	var total int64
	for _, t := range tenants {
		n, err := execBatches(ctx, m.conn, deleteTenantExpiredKeysSQL, pgx.NamedArgs{"tenant_id": t, "limit": batch})
		if total += n; err != nil {
			return total, err
		}
	}
	return total, nil
}

const tenantIDsSQL = `SELECT id FROM tenants ORDER BY id`

// deleteTenantExpiredKeysSQL is deleteExpiredKeysSQL within one tenant.
const deleteTenantExpiredKeysSQL = `
DELETE FROM idempotency_keys k
USING (SELECT tenant_id, key FROM idempotency_keys WHERE tenant_id = @tenant_id AND expires_at <= statement_timestamp()
       LIMIT @limit FOR UPDATE SKIP LOCKED) e
WHERE k.tenant_id = @tenant_id AND k.tenant_id = e.tenant_id AND k.key = e.key AND k.expires_at <= statement_timestamp()`

// A claim is forgotten once expires_at has passed on the database's clock,
// which claimSQL sets it by. Rows being reclaimed right now are skipped, and
// the outer WHERE re-checks expiry so a claim renewed meanwhile is never
// deleted.
const deleteExpiredKeysSQL = `
DELETE FROM idempotency_keys k
USING (SELECT tenant_id, key FROM idempotency_keys WHERE expires_at <= statement_timestamp() LIMIT @limit FOR UPDATE SKIP LOCKED) e
WHERE k.tenant_id = e.tenant_id AND k.key = e.key AND k.expires_at <= statement_timestamp()`

// deleteExpiredAuditSQL deletes audit entries past domain.AuditRetention,
// counted in days from now() exactly as trigger audit_log_append_only
// (migration 00016) counts them, so that it never refuses one.
const deleteExpiredAuditSQL = `
DELETE FROM audit_log a
USING (SELECT tenant_id, id FROM audit_log WHERE at < now() - @days::integer * interval '1 day' LIMIT @limit) e
WHERE a.tenant_id = e.tenant_id AND a.id = e.id`

// deleteFinishedReplaysSQL deletes replay jobs that ended before @before:
// the log they replayed from is gone by then too.
const deleteFinishedReplaysSQL = `
DELETE FROM replay_jobs j
USING (SELECT tenant_id, id FROM replay_jobs WHERE finished_at < @before LIMIT @limit) e
WHERE j.tenant_id = e.tenant_id AND j.id = e.id`

// deleteFinishedBackfillsSQL deletes backfill jobs that ended before
// @before, as replay jobs go.
const deleteFinishedBackfillsSQL = `
DELETE FROM backfill_jobs j
USING (SELECT tenant_id, id FROM backfill_jobs WHERE finished_at < @before LIMIT @limit) e
WHERE j.tenant_id = e.tenant_id AND j.id = e.id`

// deleteExpiredOverloadsSQL deletes the counts of deliveries refused for
// overload of hours before @before, kept as long as the event log (the
// overview shows the last 24 hours).
const deleteExpiredOverloadsSQL = `
DELETE FROM overload_refusals o
USING (SELECT tenant_id, hour, reason FROM overload_refusals WHERE hour < @before LIMIT @limit) e
WHERE o.tenant_id = e.tenant_id AND o.hour = e.hour AND o.reason = e.reason`

// deleteExpiredRefusalMinutesSQL deletes the per-minute counts of refused
// deliveries (migration 00047) of minutes before @before: only the
// refusals alert reads them, over a window of at most alerting.MaxWindow.
const deleteExpiredRefusalMinutesSQL = `
DELETE FROM refusal_minutes m
USING (SELECT tenant_id, minute, provider_id FROM refusal_minutes WHERE minute < @before LIMIT @limit) e
WHERE m.tenant_id = e.tenant_id AND m.minute = e.minute AND m.provider_id = e.provider_id`

// refusalMinutesKept is how long the per-minute counts of refused
// deliveries are kept, whatever the logs' retention: the longest window of
// the refusals alert, and the minute in which it begins.
const refusalMinutesKept = alerting.MaxWindow + time.Minute

// deleteDroppedSearchSQL deletes the words of events on days before
// @before, whose partitions the pass dropped, along each tenant's part of
// event_search's key.
const deleteDroppedSearchSQL = `
DELETE FROM event_search s
USING (SELECT tenant_id, received_at, delivery_id, seq FROM event_search
       WHERE tenant_id IN (SELECT id FROM tenants) AND received_at < @before LIMIT @limit) e
WHERE s.tenant_id = e.tenant_id AND s.received_at = e.received_at AND s.delivery_id = e.delivery_id AND s.seq = e.seq`

// deleteExpiredChangesSQL deletes, of each tenant's oldest changes, those
// committed before @before that no active destination still needs: every
// active destination's cursor has passed them and none waits to send them.
// A paused or failing destination keeps nothing past retention (changes
// hold record snapshots, personal data the retention is there to bound):
// resumed, it records what retention removed as gone. The feed is read
// from its oldest retained change, so the oldest go first.
const deleteExpiredChangesSQL = `
DELETE FROM changes c
USING (SELECT x.tenant_id, x.position
       FROM change_heads h
       CROSS JOIN LATERAL (SELECT tenant_id, position, committed_at FROM changes
                           WHERE tenant_id = h.tenant_id ORDER BY position LIMIT @limit) x
       WHERE x.committed_at < @before
         AND NOT EXISTS (SELECT FROM destinations d
                         WHERE d.tenant_id = x.tenant_id AND d.status = 'active' AND d.cursor < x.position)
         AND NOT EXISTS (SELECT FROM destination_queue q
                         JOIN destinations d ON d.tenant_id = q.tenant_id AND d.id = q.destination_id AND d.status = 'active'
                         WHERE q.tenant_id = x.tenant_id AND q.position = x.position)) e
WHERE c.tenant_id = e.tenant_id AND c.position = e.position`

// Report says what one maintenance pass did.
type Report struct {
	Skipped           bool     // another process was running a pass; this one did nothing
	ExpiredKeys       int64    // idempotency keys deleted
	ExpiredAudit      int64    // audit entries past domain.AuditRetention deleted
	FinishedReplays   int64    // replay jobs that ended before the log's retention, deleted
	FinishedBackfills int64    // backfill jobs that ended before the log's retention, deleted
	ExpiredOverloads  int64    // counts of deliveries refused for overload, of hours before the log's retention
	ExpiredRefusals   int64    // per-minute counts of refused deliveries older than the longest refusals window
	DroppedSearch     int64    // event_search rows of the days dropped, deleted
	DroppedPartitions []string // daily partitions past retention, detached and dropped
	CreatedPartitions []string // partitions created (daily ones ahead, and catch-alls)
	Deferred          []string // steps that gave up waiting for a lock; the next pass retries them
	PrunedRevisions   int64    // accepted revisions past the history retention, deleted
	PrunedConflicts   int64    // resolved conflicts past the history retention, deleted
	ExpiredChanges    int64    // changes of the feed past retention that no destination needs, deleted
}

// String describes the report in one line.
func (r Report) String() string {
	if r.Skipped {
		return "skipped: another process is running maintenance"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "removed %d expired idempotency keys; dropped %d partitions", r.ExpiredKeys, len(r.DroppedPartitions))
	if len(r.DroppedPartitions) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.DroppedPartitions, ", "))
	}
	if len(r.CreatedPartitions) > 0 {
		fmt.Fprintf(&b, "; created %d partitions", len(r.CreatedPartitions))
	}
	if r.PrunedRevisions+r.PrunedConflicts > 0 {
		fmt.Fprintf(&b, "; removed %d accepted revisions and %d resolved conflicts past the history retention", r.PrunedRevisions, r.PrunedConflicts)
	}
	if r.ExpiredAudit > 0 {
		fmt.Fprintf(&b, "; removed %d audit entries past their retention", r.ExpiredAudit)
	}
	if r.FinishedReplays > 0 {
		fmt.Fprintf(&b, "; removed %d finished replay jobs", r.FinishedReplays)
	}
	if r.ExpiredOverloads > 0 {
		fmt.Fprintf(&b, "; removed %d hourly counts of overload refusals", r.ExpiredOverloads)
	}
	if r.ExpiredRefusals > 0 {
		fmt.Fprintf(&b, "; removed %d per-minute counts of refused deliveries older than the longest alert window", r.ExpiredRefusals)
	}
	if r.FinishedBackfills > 0 {
		fmt.Fprintf(&b, "; removed %d finished backfill jobs", r.FinishedBackfills)
	}
	if r.ExpiredChanges > 0 {
		fmt.Fprintf(&b, "; removed %d changes of the feed past retention", r.ExpiredChanges)
	}
	if r.DroppedSearch > 0 {
		fmt.Fprintf(&b, "; removed the search words of %d events past retention", r.DroppedSearch)
	}
	if len(r.Deferred) > 0 {
		fmt.Fprintf(&b, "; deferred to the next pass: %s", strings.Join(r.Deferred, "; "))
	}
	return b.String()
}

// Cleanup runs one maintenance pass: it makes sure the daily partitions of
// today and the next PartitionsAhead days exist, detaches and drops the ones whose
// whole day ended before now-retention, and deletes expired idempotency
// keys in batches. When another process is running a pass, it returns at
// once with Skipped set. Steps that could not get their lock in time are
// listed in Deferred and retried by the next pass. A retention shorter
// than the largest scope TTL drops nothing and is an EINVALID error (the
// rest of the pass still runs); one shorter than domain.MinRetention is
// refused before anything runs. The pass also deletes the history past
// its retention (history_retention.go).
func (mt *Maintainer) Cleanup(ctx context.Context, now time.Time, retention time.Duration) (Report, error) {
	return mt.cleanup(ctx, now, retention, cleanupBatch)
}

func (mt *Maintainer) cleanup(ctx context.Context, now time.Time, retention time.Duration, batch int) (Report, error) {
	var r Report
	if err := domain.ValidateRetention(retention, 0, ""); err != nil {
		return r, err
	}
	err := mt.run(ctx, false, &r, func(m *pass) error {
		partitionsErr := m.partitions(ctx, func() error {
			if err := m.ensure(ctx, now, PartitionsAhead); err != nil {
				return err
			}
			if err := checkRetention(ctx, m.conn, retention); err != nil {
				return err
			}
			return m.dropBefore(ctx, now.Add(-retention))
		})
		n, err := m.deleteExpiredKeys(ctx, batch)
		r.ExpiredKeys = n
		if err != nil {
			return fmt.Errorf("delete expired idempotency keys: %w", err)
		}
		if err := m.pruneHistory(ctx, now.Add(-cmp.Or(mt.historyRetention, retention)), batch); err != nil {
			return err
		}
		r.ExpiredAudit, err = execBatches(ctx, m.conn, deleteExpiredAuditSQL,
			pgx.NamedArgs{"days": int(domain.AuditRetention / (24 * time.Hour)), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete audit entries past retention: %w", err)
		}
		r.FinishedReplays, err = execBatches(ctx, m.conn, deleteFinishedReplaysSQL,
			pgx.NamedArgs{"before": now.Add(-retention), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete finished replay jobs: %w", err)
		}
		r.FinishedBackfills, err = execBatches(ctx, m.conn, deleteFinishedBackfillsSQL,
			pgx.NamedArgs{"before": now.Add(-retention), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete finished backfill jobs: %w", err)
		}
		r.ExpiredOverloads, err = execBatches(ctx, m.conn, deleteExpiredOverloadsSQL,
			pgx.NamedArgs{"before": now.Add(-retention), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete overload refusal counts past retention: %w", err)
		}
		r.ExpiredRefusals, err = execBatches(ctx, m.conn, deleteExpiredRefusalMinutesSQL,
			pgx.NamedArgs{"before": now.Add(-refusalMinutesKept), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete per-minute refusal counts past the longest alert window: %w", err)
		}
		r.ExpiredChanges, err = execBatches(ctx, m.conn, deleteExpiredChangesSQL,
			pgx.NamedArgs{"before": now.Add(-retention), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete changes past retention: %w", err)
		}
		r.DroppedSearch, err = execBatches(ctx, m.conn, deleteDroppedSearchSQL,
			pgx.NamedArgs{"before": pg.UTCDay(now.Add(-retention)), "limit": batch})
		if err != nil {
			return fmt.Errorf("delete the search words of dropped days: %w", err)
		}
		return partitionsErr
	})
	return r, err
}

// EnsurePartitions makes sure the daily partitions of events and
// deliveries exist for the UTC days from `from` through `from+ahead`, named
// events_pYYYYMMDD / deliveries_pYYYYMMDD, and returns the names of the
// partitions it created. It waits for a pass another process is running.
// A step that could not get its lock in time makes it return EUNAVAILABLE
// (with what it created so far); the next Cleanup retries.
func (mt *Maintainer) EnsurePartitions(ctx context.Context, from time.Time, ahead int) ([]string, error) {
	if ahead < 0 {
		return nil, domain.Errorf(domain.EINVALID, "ahead must not be negative")
	}
	var r Report
	err := mt.run(ctx, true, &r, func(m *pass) error {
		return m.partitions(ctx, func() error { return m.ensure(ctx, from, ahead) })
	})
	if err == nil && len(r.Deferred) > 0 {
		err = domain.Errorf(domain.EUNAVAILABLE, "preparing partitions gave up for now (%s); the next cleanup pass retries",
			strings.Join(r.Deferred, "; "))
	}
	return r.CreatedPartitions, err
}

// CheckRetention refuses a retention of the logs shorter than
// domain.MinRetention or than the largest scope TTL of any tenant, with a
// message that says which scope and what to pass instead (EINVALID).
func (mt *Maintainer) CheckRetention(ctx context.Context, retention time.Duration) error {
	return checkRetention(ctx, mt.pool, retention)
}

func checkRetention(ctx context.Context, q pg.Querier, retention time.Duration) error {
	var (
		ttl                                  int64
		tenant, provider, objectType, action string
	)
	err := q.QueryRow(ctx, largestTTLSQL).Scan(&ttl, &tenant, &provider, &objectType, &action)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("find the largest scope TTL: %w", pg.Translate(err))
	}
	owner := fmt.Sprintf("scope %s.%s of provider %s of tenant %s", objectType, action, provider, tenant)
	return domain.ValidateRetention(retention, time.Duration(ttl)*time.Second, owner)
}

// maintain runs fn on a connection of its own holding the maintenance
// lock: waiting for it when wait is set, else marking r skipped when
// another process holds it. The lock is released when fn returns, and
// closing the connection takes its session settings (lock_timeout) with it.
func (mt *Maintainer) run(ctx context.Context, wait bool, r *Report, fn func(*pass) error) error {
	cfg := mt.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = maintenanceApp
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return pg.Translate(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	key := pgx.NamedArgs{"key": maintenanceLockKey}
	if wait {
		_, err = conn.Exec(ctx, waitMaintenanceLockSQL, key)
	} else {
		var locked bool
		err = conn.QueryRow(ctx, tryMaintenanceLockSQL, key).Scan(&locked)
		r.Skipped = err == nil && !locked
	}
	if err != nil || r.Skipped {
		return pg.Translate(err)
	}
	// Unlock before the connection closes: a closed session's locks go only
	// when its backend exits, which the next pass could beat and be skipped.
	// If this fails the connection is broken, and closing it releases the lock.
	defer conn.Exec(context.WithoutCancel(ctx), unlockMaintenanceSQL, key)
	_, err = conn.Exec(ctx, maintenanceTimeoutsSQL, pgx.NamedArgs{
		"lock_timeout": maintenanceLockTimeout, "statement_timeout": maintenanceStatementTimeout})
	if err != nil {
		return pg.Translate(err)
	}
	distributed, err := pg.Distributed(ctx, conn, "idempotency_keys")
	if err != nil {
		return pg.Translate(err)
	}
	return fn(&pass{conn: conn, report: r, distributed: distributed})
}

// execBatches runs a bounded statement, each time in its own implicit
// transaction, until it affects no row, and returns the rows affected.
func execBatches(ctx context.Context, q pg.Querier, sql string, args pgx.NamedArgs) (int64, error) {
	var total int64
	for {
		tag, err := q.Exec(ctx, sql, args)
		if err != nil {
			return total, pg.Translate(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() == 0 {
			return total, nil
		}
	}
}

// errGaveUp ends the partition work of a pass on one log after a step
// gave up waiting; the step is in the report's Deferred list.
var errGaveUp = errors.New("a maintenance step gave up waiting for a lock")

// gaveUp reports whether err is a lock_timeout or statement_timeout, which
// the next pass retries.
func gaveUp(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "57014") {
		return pgErr.Message, true
	}
	return "", false
}
