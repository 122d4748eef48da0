-- +goose Up
-- Leads in the records directory. A lead signup (lead.signup) writes
-- people, accounts and tasks, not a record, so record_search never held
-- one: lead_search is the directory's row of each lead a provider sent, by
-- its email, kept by IndexSearch from the signup events (as event_search
-- is) and removed with the lead's erasure. The directory reads both
-- tables, in the same order.
CREATE TABLE lead_search (
    tenant_id         bigint NOT NULL,
    provider_id       bigint NOT NULL,
    object_type       text NOT NULL DEFAULT 'lead',
    object_id         text NOT NULL, -- the email
    updated_at        timestamptz NOT NULL, -- the newest signup
    application_count integer NOT NULL,     -- the applied signups
    snapshot          jsonb,                -- the newest signup's, for its name
    vector            tsvector NOT NULL,    -- its words
    PRIMARY KEY (tenant_id, provider_id, object_type, object_id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX lead_search_recent ON lead_search (tenant_id, updated_at, object_id, provider_id, object_type);
CREATE INDEX lead_search_ids ON lead_search (tenant_id, object_id text_pattern_ops);

INSERT INTO lead_search (tenant_id, provider_id, object_type, object_id, updated_at, application_count, snapshot, vector)
SELECT DISTINCT ON (tenant_id, provider_id, object_id) tenant_id, provider_id, 'lead', object_id,
       max(received_at) OVER w, count(*) FILTER (WHERE outcome = 'applied') OVER w, snapshot,
       to_tsvector('simple'::regconfig, coalesce(snapshot, '{}'))
FROM events
WHERE object_type = 'lead' AND action = 'signup' AND object_id IS NOT NULL
WINDOW w AS (PARTITION BY tenant_id, provider_id, object_id)
ORDER BY tenant_id, provider_id, object_id, (snapshot IS NULL), received_at DESC;

-- +goose Down
DROP TABLE lead_search;
