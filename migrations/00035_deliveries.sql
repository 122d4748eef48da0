-- +goose Up
-- The delivery inspector's processing time (issue 28): when the ingest
-- transaction wrote the delivery (clock_timestamp() in the statement that
-- inserts it, just before the commit the answer waits for). Nullable
-- without a default, so adding it to the partitioned log changes only the
-- catalog; refused deliveries (answered before anything is written) and
-- those stored before have it NULL.
ALTER TABLE deliveries ADD COLUMN answered_at timestamptz;

-- +goose Down
ALTER TABLE deliveries DROP COLUMN answered_at;
