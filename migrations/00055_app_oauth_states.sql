-- +goose Up
-- The OAuth installs under way (issue 44): each "Connect HubSpot" leaves a
-- state here, keyed by its SHA-256 (the state itself is only in the
-- authorize URL), bound to the operator, the tenant, the app, the provider
-- to create or reuse, and a nonce kept in the operator's console session.
-- The callback deletes it as it reads it (DELETE ... RETURNING): a state
-- is used once, and only within ten minutes of created_at. Global, as the
-- app tables are: a reference table on Citus (postgres/citus).

CREATE TABLE app_oauth_states (
    state_hash    bytea PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id     bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    app_id        bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider_name text NOT NULL,
    nonce_hash    bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX app_oauth_states_created ON app_oauth_states (created_at);

-- +goose Down
DROP TABLE app_oauth_states;
