-- +goose Up
-- The org's daily event delivery allocation as its subscriber last read
-- it from Salesforce's limits (issue 46): shown on the provider's page and
-- watched by the cdc_allocation alert rule.
ALTER TABLE cdc_streams ADD COLUMN allocation_max bigint, ADD COLUMN allocation_remaining bigint,
    ADD COLUMN allocation_at timestamptz;

-- +goose Down
ALTER TABLE cdc_streams DROP COLUMN allocation_max, DROP COLUMN allocation_remaining, DROP COLUMN allocation_at;
