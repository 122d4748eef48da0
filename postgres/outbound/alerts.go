package outbound

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
)

// A destination subscribed to alert types takes the tenant's alert events
// (migration 00038) into the same queue as its changes, at positions below
// zero (stream.AlertQueueBase), all under the record key 'alerts': one
// alert event at a time, in event order, with the changes' retries,
// attempts and give-up. The evaluator writes alert_events one transaction
// at a time, so their ids come in commit order and a cursor skips none.

// fillAlertsSQL takes the alert events after the alert cursor into the
// queue, those the destination's types select, and moves the alert cursor
// to the last event scanned: fillSQL's rules (the lease, the row lock, the
// room left, nothing written when idle), for destinations with an alert
// type only.
const fillAlertsSQL = `
WITH d AS (
    SELECT alert_cursor, types FROM destinations
    WHERE tenant_id = @tenant_id AND id = @id AND lease_owner = @owner AND lease_until > now() AND status = 'active'
      AND EXISTS (SELECT FROM unnest(types) t WHERE starts_with(t, 'alert.'))
      AND alert_cursor < coalesce((SELECT max(e.id) FROM alert_events e WHERE e.tenant_id = @tenant_id), 0)
    FOR UPDATE
), room AS (
    SELECT greatest(0, least(@batch::bigint, @max_pending::bigint - count(*))) AS n FROM destination_queue
    WHERE tenant_id = @tenant_id AND destination_id = @id
), scanned AS (
    SELECT e.id, e.type, e.at
    FROM d CROSS JOIN LATERAL (
        SELECT * FROM alert_events e WHERE e.tenant_id = @tenant_id AND e.id > d.alert_cursor
        ORDER BY e.id LIMIT (SELECT n FROM room)) e
), queued AS (
    INSERT INTO destination_queue (tenant_id, destination_id, position, record_key, committed_at)
    SELECT @tenant_id, @id, s.id + @alert_base::bigint, 'alerts', s.at
    FROM scanned s, d
    WHERE EXISTS (SELECT FROM unnest(d.types) t WHERE t = s.type OR t = 'alert.*')
)
UPDATE destinations SET alert_cursor = (SELECT max(id) FROM scanned)
WHERE tenant_id = @tenant_id AND id = @id AND EXISTS (SELECT FROM scanned)`

// goneAlertError is the attempt recorded for an alert event removed (with
// its alert) before it was delivered.
const goneAlertError = "not sent: the alert was removed before it was delivered"

// dueAlertSQL picks the destination's first pending alert event when it is
// due and not in flight, for owner while it holds the lease, with its
// alert as the event shows it: a firing unresolved, with the value it
// fired with; a resolution with its time and value. An event whose alert
// was removed leaves the queue with an attempt that says so.
const dueAlertSQL = `
WITH first AS (
    SELECT position, attempts, next_attempt_at FROM destination_queue
    WHERE tenant_id = @tenant_id AND destination_id = @id AND record_key = 'alerts'
    ORDER BY position LIMIT 1
), due AS (
    SELECT position, attempts FROM first
    WHERE next_attempt_at <= now() AND position <> ALL(@in_flight::bigint[])
      AND EXISTS (SELECT FROM destinations d WHERE d.tenant_id = @tenant_id AND d.id = @id
                  AND d.lease_owner = @owner AND d.lease_until > now() AND d.status = 'active')
), gone AS (
    DELETE FROM destination_queue q USING due
    WHERE q.tenant_id = @tenant_id AND q.destination_id = @id AND q.position = due.position
      AND NOT EXISTS (SELECT FROM alert_events e WHERE e.tenant_id = @tenant_id AND e.id = due.position - @alert_base::bigint)
    RETURNING q.position
), noted AS (
    INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
    SELECT @tenant_id, @id, position, 0, @gone_error, 0 FROM gone
)
SELECT due.attempts, due.position, e.id, e.type, e.at, a.id, a.rule, a.provider, a.subject, a.summary,
       CASE WHEN e.type = 'alert.resolved' THEN coalesce(a.resolved_value, a.value) ELSE a.value END,
       a.threshold, a.window_seconds, a.started_at,
       CASE WHEN e.type = 'alert.resolved' THEN coalesce(a.resolved_at, e.at) END
FROM due
JOIN alert_events e ON e.tenant_id = @tenant_id AND e.id = due.position - @alert_base::bigint
JOIN alerts a ON a.tenant_id = @tenant_id AND a.id = e.alert_id`

// scanAlert reads a row of dueAlertSQL.
func scanAlert(row pgx.CollectableRow, tenantID int64) (stream.QueuedChange, error) {
	ev := &alerting.Event{TenantID: tenantID}
	q := stream.QueuedChange{Change: stream.Change{TenantID: tenantID}, Alert: ev}
	var windowSeconds int64
	err := row.Scan(&q.Attempts, &q.Position, &ev.ID, &ev.Type, &ev.At, &ev.Alert.ID, &ev.Alert.Rule, &ev.Alert.Provider,
		&ev.Alert.Subject, &ev.Alert.Summary, &ev.Alert.Value, &ev.Alert.Threshold, &windowSeconds, &ev.Alert.StartedAt,
		&ev.Alert.ResolvedAt)
	ev.Alert.Window = time.Duration(windowSeconds) * time.Second
	return q, err
}
