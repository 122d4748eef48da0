-- +goose Up
-- Indexes for the console overview (postgres/console_overview.go).
--
-- The overview reads a tenant's counters of the last 30 days; the primary
-- key puts provider_id before bucket, so without this index it would read
-- the tenant's whole history.
CREATE INDEX outcome_counters_recent ON outcome_counters (tenant_id, bucket);

-- As it reads, the overview folds the counter shards of closed hours into
-- shard 0, so that a month of counts is one row per provider, hour and
-- outcome instead of up to sixteen. This index finds the rows still to
-- fold without reading the folded ones.
--
-- Ingest adds an entry to these indexes only when it creates a shard's row,
-- once an hour at most; its increments change no indexed column.
CREATE INDEX outcome_counters_unfolded ON outcome_counters (tenant_id, bucket) WHERE shard <> 0;

-- +goose Down
DROP INDEX outcome_counters_unfolded, outcome_counters_recent;
