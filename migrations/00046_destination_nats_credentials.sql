-- +goose Up
-- A NATS destination's credentials (the review's M6): a credentials file or
-- an nkey seed, and the certificate authorities its server's certificate is
-- checked against. One row per destination that has any; none for those
-- created before, which connect without credentials as they did. The
-- credentials are sealed together (a JSON object) like signing secrets: the
-- keyring's key_id, aad_version 4 (bound to the tenant and destination) and
-- the ciphertext; `tidemark secrets rekey` re-seals them. auth and tls_ca
-- say what they hold, for listings, without opening them.
CREATE TABLE destination_nats_credentials (
    tenant_id      bigint NOT NULL,
    destination_id bigint NOT NULL,
    auth           text NOT NULL CHECK (auth IN ('creds', 'nkey', 'none')),
    tls_ca         boolean NOT NULL,
    key_id         text NOT NULL,
    aad_version    smallint NOT NULL,
    ciphertext     bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, destination_id),
    FOREIGN KEY (tenant_id, destination_id) REFERENCES destinations (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE destination_nats_credentials;
