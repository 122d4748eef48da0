package maintain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// History retention, a step of the cleanup pass: accepted revisions and
// resolved conflicts older than the history retention are deleted, so that
// the database does not grow without bound, except what the current state
// rests on:
//   - the highest accepted revision of every record, per property for a
//     per-property record (ties: the later, an adoption), whatever its
//     age: the record's timeline starts there, and reconciliation checks
//     the record against it;
//   - open conflicts, and a resolved one whose adopted revision is kept.
//
// Like the rest of the pass, these statements are cross-tenant by nature:
// retention applies to every tenant at once. Each batch is a statement of
// its own, in its own transaction, that locks only the rows it deletes,
// which ingest never locks (it only inserts accepted revisions and
// conflicts), so ingest never waits for it.

// SetHistoryRetention sets how long accepted revisions and resolved
// conflicts are kept (see domain.ValidateHistoryRetention); 0, the default,
// keeps them as long as the event log, Cleanup's retention. Call it before
// the first Cleanup.
func (mt *Maintainer) SetHistoryRetention(d time.Duration) { mt.historyRetention = d }

// pruneRevisionsSQL examines the next @limit accepted revisions applied
// before @before, in (applied_at, tenant_id, id) order after the cursor
// (index accepted_revisions_applied_at), deletes those a higher revision
// of the same record and property supersedes, and adds what it deleted to
// pruned_revisions in the same statement, so that reconciliation still
// accounts for every application. It answers the last row examined, the
// next batch's cursor, with the number deleted; no row when none is left.
// A superseding row deleted by the same statement is itself superseded,
// so the highest one always stays; for a reset record, the highest one
// accepted since the reset (ResetRecord), which reconciliation compares.
const pruneRevisionsSQL = `
WITH examined AS (
    SELECT a.tenant_id, a.id, a.provider_id, a.object_type, a.object_id, a.property, a.revision, a.applied_at,
           a.before_reset
    FROM accepted_revisions a
    WHERE a.applied_at < @before
      AND (a.applied_at, a.tenant_id, a.id) > (@after_at::timestamptz, @after_tenant::bigint, @after_id::bigint)
    ORDER BY a.applied_at, a.tenant_id, a.id
    LIMIT @limit
), gone AS (
    DELETE FROM accepted_revisions a
    USING examined x
    WHERE a.tenant_id = x.tenant_id AND a.id = x.id
      AND EXISTS (SELECT FROM accepted_revisions n
                  WHERE n.tenant_id = x.tenant_id AND n.provider_id = x.provider_id AND n.object_type = x.object_type
                    AND n.object_id = x.object_id AND n.property IS NOT DISTINCT FROM x.property
                    AND (n.revision, n.applied_at, n.id) > (x.revision, x.applied_at, x.id)
                    -- Since a reset, only a revision accepted after it supersedes.
                    AND (x.before_reset OR NOT n.before_reset))
    RETURNING a.tenant_id, a.provider_id, a.object_type, a.object_id
), tallied AS (
    INSERT INTO pruned_revisions AS p (tenant_id, provider_id, object_type, object_id, n)
    SELECT tenant_id, provider_id, object_type, object_id, count(*) FROM gone GROUP BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET n = p.n + EXCLUDED.n
)
SELECT applied_at, tenant_id, id, (SELECT count(*) FROM gone)
FROM examined
ORDER BY applied_at DESC, tenant_id DESC, id DESC
LIMIT 1`

// pruneConflictsSQL deletes up to @limit conflicts resolved before
// @before. An adopted conflict stays while the revision it produced is
// kept, so that the record's timeline still links to it.
const pruneConflictsSQL = `
DELETE FROM conflicts c
USING (SELECT o.tenant_id, o.id FROM conflicts o
       WHERE o.status <> 'open' AND o.resolved_at < @before
         AND NOT EXISTS (SELECT FROM accepted_revisions a
                         WHERE a.tenant_id = o.tenant_id AND a.provider_id = o.provider_id
                           AND a.object_type = o.object_type AND a.object_id = o.object_id AND a.conflict_id = o.id)
       LIMIT @limit) d
WHERE c.tenant_id = d.tenant_id AND c.id = d.id AND c.status <> 'open'`

// pruneHistory deletes the accepted revisions and resolved conflicts that
// retention lets go before before, in batches of batch, and counts them in
// the report. A batch that gives up waiting for a lock is deferred to the
// next pass.
func (m *pass) pruneHistory(ctx context.Context, before time.Time, batch int) error {
	args := pgx.NamedArgs{"before": before, "limit": batch, "after_at": time.Time{}, "after_tenant": int64(0), "after_id": int64(0)}
	for {
		var (
			at       time.Time
			tenantID int64
			id, n    int64
		)
		err := m.conn.QueryRow(ctx, pruneRevisionsSQL, args).Scan(&at, &tenantID, &id, &n)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if msg, ok := gaveUp(err); ok {
			m.report.Deferred = append(m.report.Deferred, "prune accepted revisions: "+msg)
			return nil
		}
		if err != nil {
			return fmt.Errorf("prune accepted revisions: %w", pg.Translate(err))
		}
		m.report.PrunedRevisions += n
		args["after_at"], args["after_tenant"], args["after_id"] = at, tenantID, id
	}
	n, err := execBatches(ctx, m.conn, pruneConflictsSQL, pgx.NamedArgs{"before": before, "limit": batch})
	m.report.PrunedConflicts = n
	if msg, ok := gaveUp(err); ok {
		m.report.Deferred = append(m.report.Deferred, "prune resolved conflicts: "+msg)
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune resolved conflicts: %w", err)
	}
	return nil
}
