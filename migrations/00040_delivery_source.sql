-- +goose Up
-- Backfill (issue 31): a delivery is either one a provider sent (source NULL)
-- or one Tidemark made of records it pulled from the provider's API
-- ('backfill'). Nullable without a default, so adding it to the partitioned
-- log changes only the catalog; deliveries stored before are webhooks.
ALTER TABLE deliveries ADD COLUMN source text CONSTRAINT deliveries_source CHECK (source IN ('backfill'));

-- +goose Down
ALTER TABLE deliveries DROP COLUMN source;
