-- +goose Up
-- A provider's API credentials, from which backfill pulls what its webhooks
-- missed (domain/pull). One row per provider. Its secret (an access token or
-- a client secret, as secret says) is sealed like signing secrets: the
-- keyring's key_id, aad_version 3 (bound to the tenant and provider) and the
-- ciphertext; `tidemark secrets rekey` re-seals it. The other fields are
-- shown to the workspace's members and recorded in the audit log.
CREATE TABLE provider_api_credentials (
    tenant_id     bigint NOT NULL,
    provider_id   bigint NOT NULL,
    secret        text NOT NULL CHECK (secret IN ('token', 'client_secret')),
    key_id        text NOT NULL,
    aad_version   smallint NOT NULL,
    ciphertext    bytea NOT NULL,
    client_id     text NOT NULL DEFAULT '',
    login_url     text NOT NULL DEFAULT '',
    api_version   text NOT NULL DEFAULT '',
    base_url      text NOT NULL DEFAULT '',
    allow_private boolean NOT NULL DEFAULT false,
    budget_share  double precision NOT NULL CHECK (budget_share > 0 AND budget_share <= 1),
    set_at        timestamptz NOT NULL DEFAULT now(),
    set_by        text NOT NULL,
    PRIMARY KEY (tenant_id, provider_id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE provider_api_credentials;
