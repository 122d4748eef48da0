-- +goose NO TRANSACTION
-- +goose Up
-- Three indexes fewer to write per event (postgres/search.go). This file
-- runs outside a transaction so that indexes are built and dropped
-- CONCURRENTLY, without holding ingest for the length of a build; every
-- statement may run again after a failed attempt.

-- IndexSearch follows accepted revisions by id: a primary key that leads
-- with id serves it, so the separate index on id goes.
DROP INDEX CONCURRENTLY IF EXISTS accepted_revisions_id_tenant;
CREATE UNIQUE INDEX CONCURRENTLY accepted_revisions_id_tenant ON accepted_revisions (id, tenant_id);
ALTER TABLE accepted_revisions DROP CONSTRAINT accepted_revisions_pkey,
    ADD CONSTRAINT accepted_revisions_pkey PRIMARY KEY USING INDEX accepted_revisions_id_tenant;
DROP INDEX CONCURRENTLY IF EXISTS accepted_revisions_id;

-- An erasure finds its events' words through the log's record index, and
-- a word search of one record's events reads the log (postgres/event.go);
-- the retention pass deletes along each tenant's part of the primary key.
DROP INDEX CONCURRENTLY IF EXISTS event_search_record;
DROP INDEX CONCURRENTLY IF EXISTS event_search_received;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_search_received ON event_search (received_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_search_record ON event_search (tenant_id, provider_id, object_type, object_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS accepted_revisions_id ON accepted_revisions (id);
DROP INDEX CONCURRENTLY IF EXISTS accepted_revisions_tenant_id;
CREATE UNIQUE INDEX CONCURRENTLY accepted_revisions_tenant_id ON accepted_revisions (tenant_id, id);
ALTER TABLE accepted_revisions DROP CONSTRAINT accepted_revisions_pkey,
    ADD CONSTRAINT accepted_revisions_pkey PRIMARY KEY USING INDEX accepted_revisions_tenant_id;
