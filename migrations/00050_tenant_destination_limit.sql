-- +goose Up
-- How many destinations a tenant may have (issue 42: one tenant's surplus
-- of destinations must not take every sender's slots); an admin raises it
-- with tidemark tenant update --max-destinations.
-- The check is named and added apart: Citus refuses a constraint added
-- with its column.
ALTER TABLE tenants ADD COLUMN max_destinations integer NOT NULL DEFAULT 20;
ALTER TABLE tenants ADD CONSTRAINT tenants_max_destinations_check CHECK (max_destinations BETWEEN 0 AND 10000);

-- +goose Down
ALTER TABLE tenants DROP COLUMN max_destinations;
