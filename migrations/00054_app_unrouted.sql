-- +goose Up
-- Unrouted events of apps (issue 44): events the app endpoint received
-- for a portal that is installed for no tenant are applied nowhere, only
-- counted per app, portal and minute, with the last sample of each app and
-- portal (that portal's events alone, never another portal's). Global, as
-- the app tables are: on Citus they are reference tables (postgres/citus).
-- Bounded: counts older than the retention are pruned when the portal is
-- counted again, and each portal keeps one sample.

CREATE TABLE app_unrouted (
    app_id    bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    portal_id bigint NOT NULL,
    minute    timestamptz NOT NULL,
    n         bigint NOT NULL,
    PRIMARY KEY (app_id, portal_id, minute)
);

CREATE TABLE app_unrouted_samples (
    app_id      bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    portal_id   bigint NOT NULL,
    received_at timestamptz NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (app_id, portal_id)
);

-- +goose Down
DROP TABLE app_unrouted_samples;
DROP TABLE app_unrouted;
