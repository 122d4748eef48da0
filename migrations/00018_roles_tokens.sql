-- +goose Up
-- Roles within a tenant, and API tokens that record who made them, may
-- expire and may be read-only.

-- Every membership before roles could do everything: it becomes an owner.
-- New memberships always name their role, so the default goes.
ALTER TABLE memberships
    ADD COLUMN role text NOT NULL DEFAULT 'owner' CHECK (role IN ('viewer', 'operator', 'owner'));
ALTER TABLE memberships ALTER COLUMN role DROP DEFAULT;

-- Tokens made before this could resolve conflicts: they stay read-write.
-- created_by is who made the token as the console showed them (an email,
-- or the CLI's user); created_by_user_id is the operator, whose tokens are
-- revoked when they stop being an owner of the tenant.
ALTER TABLE api_tokens
    ADD COLUMN access text NOT NULL DEFAULT 'write' CHECK (access IN ('read', 'write')),
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN created_by text NOT NULL DEFAULT '',
    ADD COLUMN created_by_user_id bigint REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE api_tokens ALTER COLUMN access DROP DEFAULT, ALTER COLUMN created_by DROP DEFAULT;
CREATE INDEX api_tokens_creator ON api_tokens (created_by_user_id, tenant_id) WHERE created_by_user_id IS NOT NULL;

-- +goose Down
DROP INDEX api_tokens_creator;
ALTER TABLE api_tokens DROP COLUMN created_by_user_id, DROP COLUMN created_by, DROP COLUMN expires_at, DROP COLUMN access;
ALTER TABLE memberships DROP COLUMN role;
