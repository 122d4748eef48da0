-- +goose Up
-- An API token is looked up within the tenant its URL names, so its unique
-- key includes tenant_id like every other tenant table's (Citus enforces
-- unique keys only within a shard). The plain index serves the one lookup
-- across tenants: telling a token of another tenant (404) from an invalid
-- one (401) after the tenant's own lookup missed.
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_tenant_id_token_hash_key UNIQUE (tenant_id, token_hash);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_token_hash_key;
CREATE INDEX api_tokens_token_hash ON api_tokens (token_hash);

-- +goose Down
DROP INDEX api_tokens_token_hash;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_token_hash_key UNIQUE (token_hash);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_tenant_id_token_hash_key;
