-- +goose Up
-- Backfill jobs run in slices (issue 42, review 4 M4): a node runs a job for
-- at most a slice of time or pages, then gives it back to the queue at the
-- position it reached, so that one tenant's jobs, endless ones included,
-- hold no node for longer than a slice. Claims take turns by tenant.
--
-- slice_started_at: when the job's latest slice was claimed; a tenant's
--   newest one is its turn (the tenant whose turn is oldest goes next).
-- pages, run_ms: the pages pulled and the time run over all its slices,
--   which the total bounds are of.
-- resume_type, resume_from, span_ms: where the next slice starts: the
--   object type ('' for the first), the time from which it is pulled again
--   (NULL for the window's start) and the sub-window a pull covers (0 for
--   the rest of the window).
ALTER TABLE backfill_jobs
    ADD COLUMN slice_started_at timestamptz,
    ADD COLUMN pages            bigint NOT NULL DEFAULT 0,
    ADD COLUMN run_ms           bigint NOT NULL DEFAULT 0,
    ADD COLUMN resume_type      text   NOT NULL DEFAULT '',
    ADD COLUMN resume_from      timestamptz,
    ADD COLUMN span_ms          bigint NOT NULL DEFAULT 0;
-- Named and added apart: Citus refuses a constraint added with its column.
ALTER TABLE backfill_jobs ADD CONSTRAINT backfill_jobs_span_ms_check CHECK (span_ms >= 0);
UPDATE backfill_jobs SET slice_started_at = started_at WHERE started_at IS NOT NULL;

-- One running job per tenant: a second node claiming one of the tenant's
-- jobs meanwhile is refused and tries another tenant's. The jobs of a
-- tenant running on several nodes before this (rolling upgrade) are queued
-- again but the oldest; their nodes see it at their next report.
UPDATE backfill_jobs j SET state = 'queued', heartbeat_at = NULL
WHERE j.state = 'running' AND EXISTS (SELECT FROM backfill_jobs o WHERE o.tenant_id = j.tenant_id
                                      AND o.state = 'running' AND o.id < j.id);
CREATE UNIQUE INDEX backfill_jobs_one_running ON backfill_jobs (tenant_id) WHERE state = 'running';

-- One queued or running job per provider started by an operator, as for
-- sweeps; the newer ones queued before this are cancelled, saying why.
UPDATE backfill_jobs j SET state = 'cancelled', finished_at = now(),
    error = 'cancelled on upgrade: a provider has at most one backfill queued or running'
WHERE NOT j.sweep AND j.state = 'queued' AND EXISTS (
    SELECT FROM backfill_jobs o WHERE o.tenant_id = j.tenant_id AND o.provider_id = j.provider_id
    AND NOT o.sweep AND o.state IN ('queued', 'running') AND (o.state = 'running' OR o.id < j.id));
CREATE UNIQUE INDEX backfill_jobs_one_manual ON backfill_jobs (tenant_id, provider_id)
    WHERE NOT sweep AND state IN ('queued', 'running');

-- A tenant's turn: its newest slice.
CREATE INDEX backfill_jobs_turn ON backfill_jobs (tenant_id, slice_started_at DESC) WHERE slice_started_at IS NOT NULL;

-- +goose Down
DROP INDEX backfill_jobs_turn;
DROP INDEX backfill_jobs_one_manual;
DROP INDEX backfill_jobs_one_running;
ALTER TABLE backfill_jobs DROP COLUMN slice_started_at, DROP COLUMN pages, DROP COLUMN run_ms,
    DROP COLUMN resume_type, DROP COLUMN resume_from, DROP COLUMN span_ms;
