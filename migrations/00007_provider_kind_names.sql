-- +goose Up
-- The provider kinds are the ones web/provider registers; the schema only
-- keeps the name well-formed, so a new kind needs no migration.
ALTER TABLE providers DROP CONSTRAINT providers_kind_check;
ALTER TABLE providers ADD CONSTRAINT providers_kind_check CHECK (kind ~ '^[a-z][a-z0-9_-]{0,31}$');

-- +goose Down
ALTER TABLE providers DROP CONSTRAINT providers_kind_check;
ALTER TABLE providers ADD CONSTRAINT providers_kind_check CHECK (kind IN ('standard', 'hubspot', 'salesforce', 'shippo'));
