-- +goose Up
-- An archived tenant (issue 49) refuses deliveries, answers 404 on its API
-- and is hidden from the console's lists; its data is kept until it is
-- unarchived or deleted. NULL: active.
ALTER TABLE tenants ADD COLUMN archived_at timestamptz;

-- +goose Down
ALTER TABLE tenants DROP COLUMN archived_at;
