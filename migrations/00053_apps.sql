-- +goose Up
-- Apps (issue 44): a provider's public app, registered once for the whole
-- service by an admin, whose installs map each portal to a tenant's
-- provider. All three tables are global: on Citus they are reference
-- tables (postgres/citus), so that the app endpoint finds a portal's
-- install without knowing its tenant. A reference table cannot keep a
-- foreign key to a distributed one, so app_installs refers to its tenant
-- (ON DELETE CASCADE: a tenant deleted takes its installs) but not to its
-- provider, which the code checks when it maps a portal and reads beside
-- the install. CHECK constraints are named and added apart, as Citus
-- wants them.

CREATE TABLE apps (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL,
    name            text NOT NULL,
    provider_app_id bigint NOT NULL,
    client_id       text NOT NULL,
    scopes          text[] NOT NULL DEFAULT '{}',
    authorize_url   text NOT NULL,
    api_base_url    text NOT NULL,
    allow_private   boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    rotated_at      timestamptz,
    CONSTRAINT apps_name_key UNIQUE (name)
);
ALTER TABLE apps ADD CONSTRAINT apps_name_check CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$');
ALTER TABLE apps ADD CONSTRAINT apps_kind_check CHECK (kind ~ '^[a-z][a-z0-9_]{0,31}$');

-- An app's client secrets, sealed under the keyring as destination
-- secrets are: the current one (expires_at NULL) and, for a grace after a
-- rotation, the one before it.
CREATE TABLE app_secrets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id      bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    key_id      text NOT NULL,
    aad_version smallint NOT NULL,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
CREATE INDEX app_secrets_app ON app_secrets (app_id);

-- One portal of an app mapped to a tenant's provider. The tokens of an
-- OAuth install are sealed together in the tokens_* columns (all three or
-- none); a portal mapped by hand has none.
CREATE TABLE app_installs (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id             bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    portal_id          bigint NOT NULL,
    tenant_id          bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    provider_id        bigint NOT NULL,
    status             text NOT NULL DEFAULT 'active',
    tokens_key_id      text,
    tokens_aad_version smallint,
    tokens_ciphertext  bytea,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT app_installs_portal_key UNIQUE (app_id, portal_id),
    CONSTRAINT app_installs_provider_key UNIQUE (app_id, tenant_id, provider_id)
);
CREATE INDEX app_installs_tenant ON app_installs (tenant_id);
ALTER TABLE app_installs ADD CONSTRAINT app_installs_status_check CHECK (status IN ('active', 'needs_reconnect'));
ALTER TABLE app_installs ADD CONSTRAINT app_installs_portal_check CHECK (portal_id > 0);
ALTER TABLE app_installs ADD CONSTRAINT app_installs_tokens_check
    CHECK ((tokens_key_id IS NULL) = (tokens_ciphertext IS NULL) AND (tokens_key_id IS NULL) = (tokens_aad_version IS NULL));

-- +goose Down
DROP TABLE app_installs;
DROP TABLE app_secrets;
DROP TABLE apps;
