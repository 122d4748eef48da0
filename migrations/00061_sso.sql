-- +goose Up
-- Single sign-on (issue 47). sso_config is the one identity provider's
-- setup, its client secret sealed under the keyring (aad_version 8, bound
-- to nothing but the row: there is one). sso_rules map a group at the
-- provider to a role in a tenant, or to the admin flag. Both are global,
-- an admin's: reference tables on Citus (postgres/citus). users gain the
-- provider's subject of an operator signed in by SSO, whose memberships
-- the rules then set, and break_glass: an admin who may still sign in
-- with a password when password sign-in is kept for admins.
CREATE TABLE sso_config (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name             text NOT NULL,
    issuer           text NOT NULL,
    client_id        text NOT NULL,
    groups_claim     text NOT NULL,
    allowed_domains  text[] NOT NULL DEFAULT '{}',
    password_sign_in text NOT NULL CHECK (password_sign_in IN ('all', 'admins', 'off')),
    session_length   interval NOT NULL,
    allow_private    boolean NOT NULL DEFAULT false,
    enabled          boolean NOT NULL DEFAULT true,
    key_id           text NOT NULL,
    aad_version      smallint NOT NULL,
    ciphertext       bytea NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sso_rules (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_name text NOT NULL,
    tenant_id  bigint REFERENCES tenants (id) ON DELETE CASCADE,
    role       text CHECK (role IN ('viewer', 'operator', 'owner')),
    is_admin   boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((is_admin AND tenant_id IS NULL AND role IS NULL) OR (NOT is_admin AND tenant_id IS NOT NULL AND role IS NOT NULL))
);
CREATE UNIQUE INDEX sso_rules_tenant_key ON sso_rules (group_name, tenant_id) WHERE NOT is_admin;
CREATE UNIQUE INDEX sso_rules_admin_key ON sso_rules (group_name) WHERE is_admin;

ALTER TABLE users
    ADD COLUMN sso_subject text,
    ADD COLUMN break_glass boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX users_sso_subject ON users (sso_subject);

-- +goose Down
DROP INDEX users_sso_subject;
ALTER TABLE users DROP COLUMN sso_subject, DROP COLUMN break_glass;
DROP TABLE sso_rules;
DROP TABLE sso_config;
