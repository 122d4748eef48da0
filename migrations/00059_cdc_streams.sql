-- +goose Up
-- Change Data Capture (issue 46): a Salesforce provider's change events,
-- read over the Pub/Sub API, are written as deliveries whose source is
-- 'cdc'. On Citus the new table's key to tenants (a reference table) must
-- not follow a parallel change of the distributed deliveries in one
-- transaction: the changes go one shard at a time, as in 00056.
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_source;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_source CHECK (source IN ('backfill', 'journal', 'cdc'));

-- Each provider's stream: its setup, and the replay id of the last event
-- written, which moves in the transaction of that event's delivery,
-- compare-and-set on the replay id the events were read after. leased_by
-- and lease_until keep two nodes from subscribing at once. The minute
-- counts give the console a rate. Tenant-owned, distributed by tenant_id
-- on Citus and colocated with providers; no foreign key to providers (a
-- table created after distribution could not keep one to a distributed
-- table): a stream left by a deleted provider is never read, as providers
-- get new ids.
CREATE TABLE cdc_streams (
    tenant_id              bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    provider_id            bigint NOT NULL,
    enabled                boolean NOT NULL DEFAULT false,
    channel                text NOT NULL DEFAULT '/data/ChangeEvents',
    pubsub_address         text,
    allow_private          boolean NOT NULL DEFAULT false,
    replay_id              bytea,
    committed_at           timestamptz,
    moved_at               timestamptz,
    events                 bigint NOT NULL DEFAULT 0,
    gaps_repaired          bigint NOT NULL DEFAULT 0,
    overflows              bigint NOT NULL DEFAULT 0,
    corrupted_replays      bigint NOT NULL DEFAULT 0,
    minute_start           timestamptz,
    minute_events          bigint NOT NULL DEFAULT 0,
    previous_minute_events bigint NOT NULL DEFAULT 0,
    last_error             text,
    last_error_at          timestamptz,
    leased_by              text,
    lease_until            timestamptz,
    PRIMARY KEY (tenant_id, provider_id)
);

-- +goose Down
DROP TABLE cdc_streams;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_source;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_source CHECK (source IN ('backfill', 'journal'));
