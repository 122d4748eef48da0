-- +goose Up
-- Record repair (postgres/repair.go). A reset forgets a record's revision
-- (records.revision = -1, domain.ForgottenRevision) and remembers which
-- accepted revisions came before it: reconciliation compares a reset
-- record only with the revisions accepted after reset_after (the highest
-- accepted_revisions id of the record at the reset, 0 when none).
ALTER TABLE records ADD COLUMN reset_after bigint, ADD COLUMN reset_at timestamptz;

-- An erased event keeps its outcome row without its content: its payload
-- is NULL, which nothing else writes.
ALTER TABLE events ALTER COLUMN payload DROP NOT NULL;

-- A record's timeline shows its resets and erasures from the audit log.
CREATE INDEX audit_log_repairs ON audit_log (tenant_id, target, at DESC)
    WHERE action IN ('record_reset', 'record_erase');

-- +goose Down
DROP INDEX audit_log_repairs;
UPDATE events SET payload = '' WHERE payload IS NULL;
ALTER TABLE events ALTER COLUMN payload SET NOT NULL;
ALTER TABLE records DROP COLUMN reset_at, DROP COLUMN reset_after;
