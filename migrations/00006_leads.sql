-- +goose Up
-- Lead capture: people, their accounts, follow-up tasks and campaign
-- memberships, found or created per identity under advisory locks. The
-- unique constraints make a locking bug fail loudly instead of storing a
-- duplicate.
CREATE TABLE accounts (
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    domain     text NOT NULL,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, domain)
);

CREATE TABLE people (
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    email      text NOT NULL,
    name       text NOT NULL DEFAULT '',
    account_id bigint,
    source     text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, email),
    FOREIGN KEY (tenant_id, account_id) REFERENCES accounts (tenant_id, id)
);

CREATE TABLE tasks (
    tenant_id  bigint NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    person_id  bigint NOT NULL,
    kind       text NOT NULL DEFAULT 'follow_up',
    title      text NOT NULL,
    status     text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, person_id, kind),
    FOREIGN KEY (tenant_id, person_id) REFERENCES people (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE campaign_members (
    tenant_id bigint NOT NULL,
    campaign  text NOT NULL,
    person_id bigint NOT NULL,
    source    text NOT NULL DEFAULT '',
    joined_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, campaign, person_id),
    FOREIGN KEY (tenant_id, person_id) REFERENCES people (tenant_id, id) ON DELETE CASCADE
);

-- What an event that changes more than one record did ('applied' or
-- 'redundant'), written by its own statement for the outcome statement.
ALTER TABLE idempotency_keys ADD COLUMN effect text;

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN effect;
DROP TABLE campaign_members, tasks, people, accounts;
