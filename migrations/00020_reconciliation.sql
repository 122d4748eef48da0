-- +goose NO TRANSACTION
-- +goose Up
-- Reconciliation and the retention of history (postgres/reconcile.go,
-- postgres/history_retention.go). This file runs outside a transaction so
-- that the index on accepted_revisions is built CONCURRENTLY, without
-- holding ingest's inserts for the length of the build; every statement
-- may run again after a failed attempt.

-- The reports of reconciliation runs (tidemark audit, nightly in serve).
-- A run checks every tenant at once and names the tenant of each violation,
-- so its report is one row under tenant_id 0 ("no tenant", as in
-- audit_log); counts holds every invariant's number of violations and
-- violations the first ones of each.
CREATE TABLE IF NOT EXISTS reconciliation_reports (
    tenant_id   bigint      NOT NULL,
    id          bigint      GENERATED ALWAYS AS IDENTITY,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    counts      jsonb       NOT NULL,
    violations  jsonb       NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

-- How many accepted revisions of each record the history retention removed,
-- so that application_count can still be checked against the ones kept.
CREATE TABLE IF NOT EXISTS pruned_revisions (
    tenant_id   bigint NOT NULL,
    provider_id bigint NOT NULL,
    object_type text   NOT NULL,
    object_id   text   NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (tenant_id, provider_id, object_type, object_id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);

-- The history retention walks the accepted revisions older than its cutoff
-- in this order. An index left invalid by an interrupted build is dropped
-- and built again.
DROP INDEX CONCURRENTLY IF EXISTS accepted_revisions_applied_at;
CREATE INDEX CONCURRENTLY accepted_revisions_applied_at ON accepted_revisions (applied_at, tenant_id, id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS accepted_revisions_applied_at;
DROP TABLE IF EXISTS pruned_revisions;
DROP TABLE IF EXISTS reconciliation_reports;
