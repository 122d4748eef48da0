-- +goose Up
-- Backfill jobs (issue 31): one pass of a provider's API over [from_at,
-- to_at), started by an operator (the API, the console) or by serve's sweep,
-- run by one serve node. A node holds a running job while it reports
-- progress (heartbeat_at); one silent for pull.StaleAfter is queued again for
-- another node. The counts are the pass's so far: deliveries and events
-- written, events by outcome, and missed, the changes webhooks had missed.
CREATE TABLE backfill_jobs (
    tenant_id        bigint      NOT NULL,
    id               bigint      GENERATED ALWAYS AS IDENTITY,
    provider_id      bigint      NOT NULL,
    sweep            boolean     NOT NULL DEFAULT false,
    from_at          timestamptz NOT NULL,
    to_at            timestamptz NOT NULL,
    object_type      text        NOT NULL DEFAULT '', -- '' for every object type of the provider's scopes
    state            text        NOT NULL DEFAULT 'queued'
                                 CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    deliveries       bigint      NOT NULL DEFAULT 0,
    events           bigint      NOT NULL DEFAULT 0,
    missed           bigint      NOT NULL DEFAULT 0,
    outcomes         jsonb       NOT NULL DEFAULT '{}',
    error            text        NOT NULL DEFAULT '',
    cancel_requested boolean     NOT NULL DEFAULT false,
    created_by       text        NOT NULL, -- the actor's name; 'sweep' for the sweep
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    heartbeat_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE,
    CHECK (from_at < to_at)
);
-- The claim takes the oldest queued job of any tenant; the stale check
-- looks at running jobs only. Both stay small: jobs end.
CREATE INDEX backfill_jobs_queued ON backfill_jobs (created_at, id) WHERE state = 'queued';
CREATE INDEX backfill_jobs_running ON backfill_jobs (heartbeat_at) WHERE state = 'running';
-- A provider's jobs, newest first (its page, the API, the sweep's newest).
CREATE INDEX backfill_jobs_provider ON backfill_jobs (tenant_id, provider_id, id DESC);
-- The newest ended sweep per provider (the overview).
CREATE INDEX backfill_jobs_last_sweep ON backfill_jobs (tenant_id, provider_id, finished_at DESC)
    WHERE sweep AND finished_at IS NOT NULL;
-- One sweep of a provider at a time, whichever node starts it.
CREATE UNIQUE INDEX backfill_jobs_one_sweep ON backfill_jobs (tenant_id, provider_id)
    WHERE sweep AND state IN ('queued', 'running');

-- +goose Down
DROP TABLE backfill_jobs;
