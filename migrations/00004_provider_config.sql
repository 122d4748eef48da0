-- +goose Up
-- Kind-specific settings of a provider connection (Salesforce organisation
-- id and sender networks, Shippo authentication mode, ...). Secrets stay in
-- provider_secrets, encrypted.
ALTER TABLE providers ADD COLUMN config jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE providers DROP COLUMN config;
