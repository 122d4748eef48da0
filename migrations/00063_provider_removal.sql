-- +goose Up
-- A removed provider (issue 49) keeps its row, so that its history keeps
-- its foreign keys, under a name no webhook URL can take: "NAME (removed)".
-- The original name is then free for a new provider, and the unique key
-- (tenant_id, name) stays as it is. NULL: in use.
ALTER TABLE providers ADD COLUMN removed_at timestamptz;
ALTER TABLE providers DROP CONSTRAINT providers_name_check;
ALTER TABLE providers ADD CONSTRAINT providers_name_check
    CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$' OR removed_at IS NOT NULL);

-- +goose Down
DELETE FROM providers WHERE removed_at IS NOT NULL;
ALTER TABLE providers DROP CONSTRAINT providers_name_check;
ALTER TABLE providers ADD CONSTRAINT providers_name_check CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$');
ALTER TABLE providers DROP COLUMN removed_at;
