-- +goose Up
-- The delivery inspector and replays (issue 12).
--
-- Each delivery keeps what its request said, secrets redacted (web/webhook.go
-- captures it): method, path, query, headers as a jsonb object of name to
-- values, whether headers or query were cut to their bounds, and the client
-- address. A replay is a delivery like any other that names the one it
-- replays. The columns are nullable without a default, so adding them to
-- the partitioned log changes only the catalog, never a row; deliveries
-- stored before have them NULL.
ALTER TABLE deliveries
    ADD COLUMN method         text,
    ADD COLUMN path           text,
    ADD COLUMN query          text,
    ADD COLUMN headers        jsonb,
    ADD COLUMN truncated      boolean,
    ADD COLUMN client_address text,
    ADD COLUMN replay_of      uuid;

-- The primary key leads with received_at, which a delivery's id does not
-- carry: find one by id with a probe of each partition's index instead of
-- a scan. The build blocks writes to the log while it runs, once.
CREATE INDEX deliveries_tenant_id ON deliveries (tenant_id, id);
-- The replays of a delivery, for its inspector page; few rows.
CREATE INDEX deliveries_replay_of ON deliveries (tenant_id, replay_of) WHERE replay_of IS NOT NULL;

-- Bulk replays: a job replays every delivery its filter matches, received
-- before the job was created (upto), in (received_at, id) order. after_at
-- and after_id are the last delivery it handled, moved in the transaction
-- that replays the next one, so a job resumes after a restart exactly where
-- it stopped. A worker holds a job while lease_until is in the future.
CREATE TABLE replay_jobs (
    tenant_id     bigint      NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id            bigint      GENERATED ALWAYS AS IDENTITY,
    filter        jsonb       NOT NULL,
    status        text        NOT NULL DEFAULT 'queued'
                              CHECK (status IN ('queued', 'running', 'done', 'cancelled', 'failed')),
    upto          timestamptz NOT NULL,
    total         bigint      NOT NULL,
    done          bigint      NOT NULL DEFAULT 0,
    counts        jsonb       NOT NULL DEFAULT '{}',
    after_at      timestamptz,
    after_id      uuid,
    actor_kind    text        NOT NULL,
    actor         text        NOT NULL,
    actor_address text        NOT NULL DEFAULT '',
    worker        text,
    lease_until   timestamptz,
    error         text        NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);
-- One job at a time per tenant, whichever node or request starts it; the
-- workers also find their next job through it.
CREATE UNIQUE INDEX replay_jobs_one_active ON replay_jobs (tenant_id) WHERE status IN ('queued', 'running');

-- +goose Down
DROP TABLE replay_jobs;
DROP INDEX deliveries_replay_of;
DROP INDEX deliveries_tenant_id;
ALTER TABLE deliveries
    DROP COLUMN method, DROP COLUMN path, DROP COLUMN query, DROP COLUMN headers,
    DROP COLUMN truncated, DROP COLUMN client_address, DROP COLUMN replay_of;
