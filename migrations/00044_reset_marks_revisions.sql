-- +goose Up
-- A reset record's earlier accepted revisions are marked when it is reset,
-- instead of being told apart by id (records.reset_after, the highest id
-- before the reset): on Citus an identity column is not in the order rows
-- were written, as the coordinator and each worker give ids from ranges
-- of their own. Reconciliation and history retention read the mark.
ALTER TABLE accepted_revisions ADD COLUMN before_reset boolean NOT NULL DEFAULT false;
UPDATE accepted_revisions a SET before_reset = true
FROM records r
WHERE r.tenant_id = a.tenant_id AND r.provider_id = a.provider_id AND r.object_type = a.object_type
  AND r.object_id = a.object_id AND a.id <= r.reset_after;
ALTER TABLE records DROP COLUMN reset_after;

-- +goose Down
ALTER TABLE records ADD COLUMN reset_after bigint;
UPDATE records r SET reset_after = coalesce((
    SELECT max(a.id) FROM accepted_revisions a
    WHERE a.tenant_id = r.tenant_id AND a.provider_id = r.provider_id AND a.object_type = r.object_type
      AND a.object_id = r.object_id AND a.before_reset), 0)
WHERE r.reset_at IS NOT NULL;
ALTER TABLE accepted_revisions DROP COLUMN before_reset;
