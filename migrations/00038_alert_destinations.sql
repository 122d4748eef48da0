-- +goose Up
-- Destinations subscribed to alert types (docs/contract/destinations.md#alerts).
-- alert_cursor: every alert event of the tenant up to it was taken into
-- destination_queue (or was not selected); a destination starts at the end
-- of alert_events, as it starts at the change feed's head. Alert events wait
-- in destination_queue beside the changes, at positions below zero
-- (event id - 2^62, domain/stream.AlertQueuePosition) under the record_key
-- 'alerts', so they keep their order, their retries and their attempts.
-- format: the body of alert messages, standard or slack.
ALTER TABLE destinations
    ADD COLUMN alert_cursor bigint NOT NULL DEFAULT 0,
    ADD COLUMN format text NOT NULL DEFAULT 'standard' CHECK (format IN ('standard', 'slack'));
UPDATE destinations d SET alert_cursor = coalesce((SELECT max(e.id) FROM alert_events e WHERE e.tenant_id = d.tenant_id), 0);

-- +goose Down
DELETE FROM destination_queue WHERE position < 0;
DELETE FROM destination_attempts WHERE position < 0;
ALTER TABLE destinations DROP COLUMN alert_cursor, DROP COLUMN format;
