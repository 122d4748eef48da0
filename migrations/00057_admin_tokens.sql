-- +goose Up
-- Admin API tokens (issue 44): good only for /api/v1/admin/..., owned by
-- no tenant, so global: a reference table on Citus (postgres/citus). Each
-- records the admin operator who created it; its lookup joins users and
-- requires that operator to be an enabled admin still, so a token stops
-- working the moment its creator is no longer one, with no sweep. A
-- creator deleted takes their tokens with them. Only the token's SHA-256
-- is kept, as for tenant tokens.
CREATE TABLE admin_tokens (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name               text NOT NULL,
    token_hash         bytea NOT NULL,
    created_by_user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_by         text NOT NULL, -- who ran the command, as the list shows it
    created_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz,
    last_used_at       timestamptz,
    revoked_at         timestamptz,
    CONSTRAINT admin_tokens_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX admin_tokens_creator ON admin_tokens (created_by_user_id);

-- +goose Down
DROP TABLE admin_tokens;
