-- +goose Up
-- Browse and search (postgres/directory.go, postgres/search.go).
--
-- The records directory and its full-text search read record_search, a
-- side table kept by (*Store).IndexSearch off the ingest path: an index on
-- records' updated_at or snapshot would be rewritten by every applied
-- event and cost ingest its HOT updates. IndexSearch finds the records
-- that changed through their accepted revisions (accepted_revisions_id)
-- and remembers how far it got in search_progress.
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE record_search (
    tenant_id         bigint NOT NULL,
    provider_id       bigint NOT NULL,
    object_type       text NOT NULL,
    object_id         text NOT NULL,
    -- the record's last change and application count when indexed: a
    -- record whose values differ is indexed again
    updated_at        timestamptz NOT NULL,
    application_count integer NOT NULL,
    vector            tsvector NOT NULL, -- the words of the current snapshot
    PRIMARY KEY (tenant_id, provider_id, object_type, object_id),
    -- an erased record leaves the directory with its row
    FOREIGN KEY (tenant_id, provider_id, object_type, object_id)
        REFERENCES records (tenant_id, provider_id, object_type, object_id) ON DELETE CASCADE
);
-- The directory's order (newest change first, then object id, provider,
-- object type), for all records and for one provider and object type.
CREATE INDEX record_search_recent ON record_search (tenant_id, updated_at, object_id, provider_id, object_type);
CREATE INDEX record_search_kind ON record_search (tenant_id, provider_id, object_type, updated_at, object_id);
-- btree_gin lets the tenant narrow the word lookup inside the index.
CREATE INDEX record_search_words ON record_search USING gin (tenant_id, vector);
CREATE INDEX record_search_ids ON record_search (tenant_id, object_id text_pattern_ops);

-- IndexSearch's position in accepted_revisions, one row. Ids up to
-- safe_id were read when no transaction that could still insert one of
-- them was running; ids up to scanned_id were read at least once;
-- pending_id is the sequence's value when the transactions pending_xids
-- of this database were running: once they have ended, ids up to it are
-- safe.
CREATE TABLE search_progress (
    one          boolean PRIMARY KEY DEFAULT true CHECK (one),
    safe_id      bigint NOT NULL DEFAULT 0,
    scanned_id   bigint NOT NULL DEFAULT 0,
    pending_id   bigint,
    pending_xids bigint[]
);
INSERT INTO search_progress DEFAULT VALUES;
CREATE INDEX accepted_revisions_id ON accepted_revisions (id);

-- Open revision conflicts of one record: the directory's badge and filter.
CREATE INDEX conflicts_open_record ON conflicts (tenant_id, provider_id, object_type, object_id) WHERE status = 'open';

-- Search of the event history over each event's snapshot. Built on the
-- partitioned log, so every partition attached later gets its own.
CREATE INDEX events_words ON events USING gin (tenant_id, to_tsvector('simple'::regconfig, snapshot));

-- +goose Down
DROP INDEX events_words;
DROP INDEX conflicts_open_record;
DROP INDEX accepted_revisions_id;
DROP TABLE search_progress;
DROP TABLE record_search;
