-- +goose Up
-- How a provider secret's ciphertext is bound to its row: 0, sealed without
-- associated data (every secret before this migration); 1, sealed with its
-- tenant and provider as associated data, so it does not decrypt in another
-- provider's row. `tidemark secrets rekey` moves every secret to 1.
ALTER TABLE provider_secrets
    ADD COLUMN aad_version smallint NOT NULL DEFAULT 0 CHECK (aad_version IN (0, 1));

-- +goose Down
ALTER TABLE provider_secrets DROP COLUMN aad_version;
