-- +goose Up
-- Whether a secret's plaintext has been shown to an operator. Secrets
-- created by an operator are shown on creation; one issued at start-up to
-- an existing provider whose kind came to need a secret (Salesforce's URL
-- token) is shown on the provider's console page until an operator
-- confirms the provider was updated. The issuing itself happens in Go after
-- the migrations, since secrets are encrypted with the application's key.
ALTER TABLE provider_secrets ADD COLUMN shown boolean NOT NULL DEFAULT true;

-- +goose Down
ALTER TABLE provider_secrets DROP COLUMN shown;
