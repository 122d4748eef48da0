-- +goose Up
-- Per-provider limits on what a delivery may carry: the largest body read
-- (NULL: the kind's default) and how far ahead of the database's clock a
-- timestamp revision may be before its event is rejected.
ALTER TABLE providers
    ADD COLUMN max_body bigint CHECK (max_body > 0),
    ADD COLUMN max_future_skew_seconds integer NOT NULL DEFAULT 300 CHECK (max_future_skew_seconds >= 0);

-- +goose Down
ALTER TABLE providers DROP COLUMN max_body, DROP COLUMN max_future_skew_seconds;
