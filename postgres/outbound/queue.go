package outbound

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Bounds of a destination's queue: a fill scans at most fillBatch changes,
// and none while the queue holds maxPending, so that a destination that
// fails does not copy the feed.
const (
	fillBatch  = 500
	maxPending = 1000
)

// fillSQL takes the changes after the cursor into the queue, those the
// destination selects (its provider, object type and types: a pattern is
// a type, or a family such as record.*; stream.CheckTypes), and moves the
// cursor to the last change scanned. It locks the destination's row
// first, and only while owner holds the lease and the feed has moved past
// the cursor: a rewind, which locks the row to empty the queue and set the
// cursor, comes wholly before or after a fill, and an idle poll writes
// nothing. A record's key is its provider id, object type and id as a
// JSON array: unambiguous, and text PostgreSQL can hold.
const fillSQL = `
WITH d AS (
    SELECT cursor, provider_id, object_type, types FROM destinations
    WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner AND lease_until > now() AND status = 'active'
      AND cursor < coalesce((SELECT h.position FROM change_heads h WHERE h.tenant_id = @tenant_id), 0)
    FOR UPDATE
), room AS (
    SELECT greatest(0, least(@batch::bigint, @max_pending::bigint - count(*))) AS n FROM destination_queue
    WHERE tenant_id = @tenant_id AND destination_id = @id
), scanned AS (
    SELECT c.position, c.type, c.provider_id, c.object_type, c.object_id, c.committed_at
    FROM d CROSS JOIN LATERAL (
        SELECT * FROM changes c WHERE c.tenant_id = @tenant_id AND c.position > d.cursor
        ORDER BY c.position LIMIT (SELECT n FROM room)) c
), queued AS (
    INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at)
    SELECT @tenant_id, @id, c.position, jsonb_build_array(c.provider_id, c.object_type, c.object_id)::text, c.committed_at
    FROM scanned c, d
    WHERE ` + pg.DestinationSelectsSQL + `
)
UPDATE destinations SET cursor = (SELECT max(position) FROM scanned)
WHERE tenant_id = @tenant_id AND id = @id AND EXISTS (SELECT FROM scanned)
RETURNING (SELECT count(*) FROM scanned)`

// Step implements stream.Outbox: recordSQL (when there are results),
// fillSQL, fillAlertsSQL, dueAlertSQL, dueSQL and signingSQL in one
// pipelined round trip, one implicit transaction. A sender's statements wait their turn for a CPU with every
// ingest connection's on a busy machine, so one round trip a cycle instead
// of three is what lets it keep up.
func (o *Outbox) Step(ctx context.Context, owner string, tenantID, id int64, done []stream.AttemptResult,
	inFlight []int64, limit int) (stream.Stepped, error) {
	var failing bool
	var due []stream.QueuedChange
	var sealed []pg.SealedSecret
	batch := &pgx.Batch{}
	if len(done) > 0 {
		batch.Queue(recordSQL, recordArgs(tenantID, id, done)).QueryRow(func(row pgx.Row) error {
			return scanFailing(row, &failing)
		})
	}
	batch.Queue(fillSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id, "owner": owner,
		"batch": fillBatch, "max_pending": maxPending})
	batch.Queue(fillAlertsSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id, "owner": owner,
		"batch": fillBatch, "max_pending": maxPending, "alert_base": stream.AlertQueueBase})
	if inFlight == nil {
		inFlight = []int64{}
	}
	var alert []stream.QueuedChange
	batch.Queue(dueAlertSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id, "owner": owner,
		"in_flight": inFlight, "alert_base": stream.AlertQueueBase, "gone_error": goneAlertError}).Query(func(rows pgx.Rows) error {
		var err error
		alert, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (stream.QueuedChange, error) {
			return scanAlert(row, tenantID)
		})
		return err
	})
	batch.Queue(dueSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id, "owner": owner,
		"in_flight": inFlight, "limit": limit, "gone_error": goneError}).Query(func(rows pgx.Rows) error {
		var attempts []int
		changes, err := changefeed.ScanChanges(attemptsFirst{rows, &attempts})
		for i, c := range changes {
			due = append(due, stream.QueuedChange{Change: c, Attempts: attempts[i]})
		}
		return err
	})
	batch.Queue(signingSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id}).Query(func(rows pgx.Rows) error {
		var err error
		sealed, err = pgx.CollectRows(rows, scanSealed)
		return err
	})
	if err := o.pool.SendBatch(ctx, batch).Close(); err != nil {
		return stream.Stepped{}, pg.Translate(err)
	}
	if len(alert) > 0 {
		// The alert goes first; a change it displaces past limit stays
		// queued for the next cycle.
		due = append(alert, due[:max(0, min(len(due), limit-len(alert)))]...)
	}
	return stream.Stepped{Failing: failing, Due: due, Secrets: o.open(sealed)}, nil
}

// goneError is the attempt recorded for a change the retention removed
// from the feed before it was delivered.
const goneError = "not sent: the change was removed from the feed (retention) before it was delivered"

// dueSQL picks the first pending change of each record, those due and not
// in flight (alert events, below zero, are dueAlertSQL's), lowest positions first, for owner while it holds the lease.
// A change the retention removed leaves the queue with an attempt that
// says so. Each change is looked up by its position in a LATERAL subquery
// with LIMIT 1, which the planner keeps a per-row primary key lookup: the
// statement's plan is made once, generic, often while the feed is still
// small, and a plain join was planned as a scan of all the tenant's
// changes for each row due (460 ms a cycle at 9,000 changes).
const dueSQL = `
WITH due AS (
    SELECT position, attempts FROM (
        SELECT DISTINCT ON (record_key) position, attempts, next_attempt_at FROM destination_queue
        WHERE tenant_id = @tenant_id AND destination_id = @id AND position > 0
        ORDER BY record_key, position) first
    WHERE next_attempt_at <= now() AND position <> ALL(@in_flight::bigint[])
      AND EXISTS (SELECT FROM destinations d WHERE d.tenant_id = @tenant_id AND d.id = @id
                  AND d.lease_owner = @owner AND d.lease_until > now() AND d.status = 'active')
    ORDER BY position LIMIT @limit
), gone AS (
    DELETE FROM destination_queue q
    WHERE q.tenant_id = @tenant_id AND q.destination_id = @id
      AND q.position = ANY (ARRAY(
          SELECT due.position FROM due
          LEFT JOIN LATERAL (SELECT true AS found FROM changes c
                             WHERE c.tenant_id = @tenant_id AND c.position = due.position LIMIT 1) c ON true
          WHERE c.found IS NULL))
    RETURNING q.position
), noted AS (
    INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
    SELECT @tenant_id, @id, position, 0, @gone_error, 0 FROM gone
)
SELECT due.attempts, ` + changefeed.Columns + `
FROM due
JOIN LATERAL (SELECT * FROM changes c WHERE c.tenant_id = @tenant_id AND c.position = due.position LIMIT 1) c ON true
JOIN providers p ON p.tenant_id = @tenant_id AND p.id = c.provider_id
ORDER BY c.position`

// attemptsFirst reads dueSQL's rows: the attempts column, then a change's
// Columns for changefeed.ScanChanges.
type attemptsFirst struct {
	pgx.Rows
	attempts *[]int
}

func (r attemptsFirst) Scan(dest ...any) error {
	var n int
	err := r.Rows.Scan(append([]any{&n}, dest...)...)
	*r.attempts = append(*r.attempts, n)
	return err
}
