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

-- IndexSearch's position in each feed it reads: 'records' (the ids of
-- accepted_revisions) and 'events' (events.search_id). Ids up to safe_id
-- were read when no transaction that could still insert one of them was
-- running; ids up to scanned_id were read at least once; pending_id is the
-- sequence's value when the transactions pending_xids of this database
-- were running: once they have ended, ids up to it are safe.
CREATE TABLE search_progress (
    feed         text PRIMARY KEY CHECK (feed IN ('records', 'events')),
    safe_id      bigint NOT NULL DEFAULT 0,
    scanned_id   bigint NOT NULL DEFAULT 0,
    pending_id   bigint,
    pending_xids bigint[]
);
INSERT INTO search_progress (feed) VALUES ('records'), ('events');
CREATE INDEX accepted_revisions_id ON accepted_revisions (id);

-- Open revision conflicts of one record: the directory's badge and filter.
CREATE INDEX conflicts_open_record ON conflicts (tenant_id, provider_id, object_type, object_id) WHERE status = 'open';

-- Search of the event history over each event's snapshot. A GIN index on
-- the log itself cost ingest 9 % of its throughput with six-field
-- snapshots and 24 % with twenty fields (BenchmarkIngestSearchIndexCost),
-- so the words live in event_search, filled by IndexSearch from
-- events.search_id: ingest pays a sequence value and a BRIN entry per
-- event (3 to 4 %). Events stored before this migration have no search_id
-- and are indexed here, once.
CREATE SEQUENCE events_search_seq;
ALTER TABLE events ADD COLUMN search_id bigint;
ALTER TABLE events ALTER COLUMN search_id SET DEFAULT nextval('events_search_seq');
CREATE INDEX events_search_id ON events USING brin (search_id);

CREATE TABLE event_search (
    tenant_id   bigint NOT NULL,
    received_at timestamptz NOT NULL,
    delivery_id uuid NOT NULL,
    seq         integer NOT NULL,
    -- what record erasure names its events by (postgres/repair.go), and
    -- the event log filters on
    provider_id bigint NOT NULL,
    object_type text NOT NULL,
    action      text NOT NULL,
    object_id   text,
    outcome     text NOT NULL,     -- as the log's filters (postgres/event.go)
    vector      tsvector NOT NULL, -- the words of the event's snapshot
    PRIMARY KEY (tenant_id, received_at, delivery_id, seq)
);
INSERT INTO event_search (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, object_id, outcome, vector)
SELECT tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, object_id, outcome,
       to_tsvector('simple'::regconfig, snapshot)
FROM events WHERE snapshot IS NOT NULL;
-- The provider and the outcome are keys of the words' index too, so that a
-- common word with a provider or an outcome (stale, conflicts) is answered
-- by one intersection in the index rather than by every match of the word.
CREATE INDEX event_search_words ON event_search USING gin (tenant_id, provider_id, outcome, vector);
CREATE INDEX event_search_record ON event_search (tenant_id, provider_id, object_type, object_id);
-- The maintenance pass deletes what the log's retention dropped.
CREATE INDEX event_search_received ON event_search (received_at);

-- +goose Down
DROP TABLE event_search;
DROP INDEX events_search_id;
ALTER TABLE events DROP COLUMN search_id;
DROP SEQUENCE events_search_seq;
DROP INDEX conflicts_open_record;
DROP INDEX accepted_revisions_id;
DROP TABLE search_progress;
DROP TABLE record_search;
