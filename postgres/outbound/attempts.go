package outbound

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// recordSQL records a batch of attempts in one statement: a change answered
// 2xx, or one the destination's filter passed over, leaves the queue (if a
// rewind has not emptied it already), another waits its retry; every
// attempt but a filtered one is logged, and the filtered are counted. A
// change failing since DestinationGiveUp or longer, or one the
// destination's filter or transform failed on (a fault), makes an active
// destination failing, which pauses it; a fault's reason goes first. The
// destination's row is written only when something delivered, was
// filtered or it fails, not for every retry. The queue's rows are named
// by arrays of positions, which its primary key finds: the queue churns
// faster than its statistics follow, and a join with the batch was planned
// as a nested loop over the whole queue. Times are computed in the clock
// and r CTEs, not beside the rows' columns in the UPDATEs: Citus refuses
// STABLE functions and operators (now(), timestamptz + interval, format)
// with column references there.
const recordSQL = `
WITH clock AS (
    SELECT now() AS now, now() - @give_up_ms * interval '1 millisecond' AS give_up_before
), r AS (
    SELECT r.*, clock.now + r.retry_ms * interval '1 millisecond' AS next_attempt_at
    FROM unnest(@position::bigint[], @status::int[], @error::text[], @duration_ms::int[], @retry_ms::bigint[],
                @filtered::bool[], @fault::text[])
        AS r (position, status, error, duration_ms, retry_ms, filtered, fault), clock
), delivered AS (
    DELETE FROM destination_queue q
    WHERE q.tenant_id = @tenant_id AND q.destination_id = @id
      AND q.position = ANY (ARRAY(SELECT position FROM r WHERE status BETWEEN 200 AND 299 OR filtered))
    RETURNING q.position
), failed AS (
    UPDATE destination_queue q SET attempts = q.attempts + 1, next_attempt_at = r.next_attempt_at,
        first_failed_at = coalesce(q.first_failed_at, clock.now), last_error = r.error
    FROM r, clock
    WHERE q.tenant_id = @tenant_id AND q.destination_id = @id
      AND q.position = ANY (ARRAY(SELECT position FROM r WHERE status NOT BETWEEN 200 AND 299 AND NOT filtered))
      AND q.position = r.position AND r.status NOT BETWEEN 200 AND 299 AND NOT r.filtered
    RETURNING q.position, q.first_failed_at, q.last_error
), given_up AS (
    SELECT reason FROM (
        SELECT fault AS reason, 0 AS rank, position::numeric AS at FROM r WHERE fault <> ''
        UNION ALL
        SELECT format('%s has not been delivered since %s: %s',
                      CASE WHEN position > 0 THEN 'change ' || position ELSE 'alert event ' || (position - @alert_base) END,
                      to_char(first_failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), last_error),
               1, extract(epoch FROM first_failed_at)
        FROM failed
        WHERE first_failed_at <= (SELECT give_up_before FROM clock)) reasons
    ORDER BY rank, at LIMIT 1
), logged AS (
    INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
    SELECT @tenant_id, @id, position, status, nullif(error, ''), duration_ms FROM r WHERE NOT filtered
)
UPDATE destinations d SET
    last_success_at = CASE WHEN EXISTS (SELECT FROM r WHERE status BETWEEN 200 AND 299) THEN clock.now ELSE d.last_success_at END,
    filtered = d.filtered + (SELECT count(*) FROM r WHERE filtered),
    status = CASE WHEN d.status = 'active' AND EXISTS (SELECT FROM given_up) THEN 'failing' ELSE d.status END,
    status_reason = CASE WHEN d.status = 'active' AND EXISTS (SELECT FROM given_up)
        THEN (SELECT reason FROM given_up)
        ELSE d.status_reason END
FROM clock
WHERE d.tenant_id = @tenant_id AND d.id = @id
  AND (EXISTS (SELECT FROM r WHERE status BETWEEN 200 AND 299 OR filtered) OR EXISTS (SELECT FROM given_up))
RETURNING d.status = 'failing'`

// RecordAttempts implements stream.Outbox.
func (o *Outbox) RecordAttempts(ctx context.Context, tenantID, id int64, results []stream.AttemptResult) (bool, error) {
	var failing bool
	return failing, scanFailing(o.pool.QueryRow(ctx, recordSQL, recordArgs(tenantID, id, results)), &failing)
}

// recordArgs are recordSQL's parameters for results.
func recordArgs(tenantID, id int64, results []stream.AttemptResult) pgx.NamedArgs {
	n := len(results)
	var (
		position, retry  = make([]int64, n), make([]int64, n)
		status, duration = make([]int32, n), make([]int32, n)
		errs, faults     = make([]string, n), make([]string, n)
		filtered         = make([]bool, n)
	)
	for i, r := range results {
		position[i], status[i], errs[i] = r.Position, int32(r.Status), r.Error
		filtered[i], faults[i] = r.Filtered, r.Fault
		duration[i], retry[i] = int32(r.Duration.Milliseconds()), r.Retry.Milliseconds()
	}
	return pgx.NamedArgs{"tenant_id": tenantID, "id": id, "position": position, "status": status, "error": errs,
		"duration_ms": duration, "retry_ms": retry, "filtered": filtered, "fault": faults, "give_up_ms": stream.DestinationGiveUp.Milliseconds(),
		"alert_base": stream.AlertQueueBase}
}

// scanFailing reads recordSQL's answer: no row when nothing was delivered
// and none given up.
func scanFailing(row pgx.Row, failing *bool) error {
	if err := row.Scan(failing); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return pg.Translate(err)
	}
	return nil
}

// keptAttempts is how many of a destination's latest attempts are kept.
const keptAttempts = 1000

// trimAttemptsSQL deletes a destination's attempts older than its latest
// keptAttempts.
const trimAttemptsSQL = `
DELETE FROM destination_attempts
WHERE tenant_id = @tenant_id AND destination_id = @id
  AND id < (SELECT id FROM destination_attempts WHERE tenant_id = @tenant_id AND destination_id = @id
            ORDER BY id DESC OFFSET @kept - 1 LIMIT 1)`

// TrimAttempts implements stream.Outbox.
func (o *Outbox) TrimAttempts(ctx context.Context, tenantID, id int64) error {
	_, err := o.pool.Exec(ctx, trimAttemptsSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": id, "kept": keptAttempts})
	return pg.Translate(err)
}
