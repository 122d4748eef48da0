-- +goose Up
-- The core of Tidemark: tenants, providers and their secrets, scopes, the
-- idempotency claims, the current records with their accepted revisions, the
-- partitioned event and delivery logs, conflicts and outcome counters.
-- Every tenant-owned table's primary key starts with tenant_id.

CREATE TABLE tenants (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE providers (
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id         bigint GENERATED ALWAYS AS IDENTITY,
    name       text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    kind       text NOT NULL CHECK (kind IN ('standard', 'hubspot', 'salesforce', 'shippo')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, name)
);

-- Signing secrets, encrypted with TIDEMARK_ENCRYPTION_KEY (AES-GCM). A
-- provider has at most two active secrets so that a rotation never drops
-- deliveries signed with the previous one.
CREATE TABLE provider_secrets (
    tenant_id   bigint NOT NULL,
    provider_id bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    key_id      text NOT NULL,  -- fingerprint of the encryption key used
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX provider_secrets_active ON provider_secrets (tenant_id, provider_id) WHERE retired_at IS NULL;

CREATE TABLE scopes (
    tenant_id       bigint NOT NULL,
    provider_id     bigint NOT NULL,
    object_type     text NOT NULL,
    action          text NOT NULL,
    ttl_seconds     integer NOT NULL DEFAULT 604800 CHECK (ttl_seconds BETWEEN 60 AND 7776000),
    identifier_rule text NOT NULL DEFAULT 'event_id',
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, provider_id, object_type, action),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE api_tokens (
    tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id           bigint GENERATED ALWAYS AS IDENTITY,
    name         text NOT NULL,
    token_hash   bytea NOT NULL UNIQUE, -- sha256 of the token; the token itself is shown once
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    is_admin      boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id)
);

-- Idempotency claims live apart from the event log so their TTL can be short
-- while history is kept longer. key is sha256(tenant, provider, object type,
-- action, identifier). content_hash fingerprints what the claiming event said
-- (record, revision, snapshot) so a reused key with other content is told
-- apart from a redelivery.
CREATE TABLE idempotency_keys (
    tenant_id    bigint NOT NULL,
    key          bytea NOT NULL,
    provider_id  bigint NOT NULL,
    identifier   text NOT NULL,
    content_hash bytea NOT NULL,
    delivery_id  uuid NOT NULL,
    seq          integer NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- The current snapshot of every record, whatever its object type.
CREATE TABLE records (
    tenant_id             bigint NOT NULL,
    provider_id           bigint NOT NULL,
    object_type           text NOT NULL,
    object_id             text NOT NULL,
    revision              bigint NOT NULL,
    snapshot              jsonb NOT NULL,
    application_count     integer NOT NULL DEFAULT 1,
    last_applied_event    text NOT NULL,
    last_applied_delivery uuid,
    last_applied_seq      integer,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, provider_id, object_type, object_id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);

-- Every snapshot that was applied, by an event or by an operator adopting a
-- conflicting one: the record's timeline, and what revision conflicts are
-- checked against.
CREATE TABLE accepted_revisions (
    tenant_id   bigint NOT NULL,
    id          bigint GENERATED ALWAYS AS IDENTITY,
    provider_id bigint NOT NULL,
    object_type text NOT NULL,
    object_id   text NOT NULL,
    revision    bigint NOT NULL,
    snapshot    jsonb NOT NULL,
    event_id    text NOT NULL,
    delivery_id uuid,
    conflict_id bigint, -- set when an operator adopted this snapshot
    applied_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX accepted_revisions_record ON accepted_revisions (tenant_id, provider_id, object_type, object_id, revision);

-- Every HTTP delivery, rejected ones included. body is kept only when the
-- signature was valid but the body could not be used (400).
CREATE TABLE deliveries (
    tenant_id   bigint NOT NULL,
    id          uuid NOT NULL,
    received_at timestamptz NOT NULL,
    provider_id bigint NOT NULL,
    status      smallint NOT NULL,
    signature   text NOT NULL CHECK (signature IN ('valid', 'invalid', 'missing', 'expired', 'unchecked')),
    reason      text,
    event_count integer NOT NULL DEFAULT 0,
    body        bytea,
    PRIMARY KEY (tenant_id, received_at, id)
) PARTITION BY RANGE (received_at);

-- The event log: every event with its outcome. Partitioned by day on
-- received_at so retention drops whole partitions instead of deleting rows.
CREATE TABLE events (
    tenant_id    bigint NOT NULL,
    received_at  timestamptz NOT NULL,
    delivery_id  uuid NOT NULL,
    seq          integer NOT NULL,
    provider_id  bigint NOT NULL,
    object_type  text NOT NULL,
    action       text NOT NULL,
    event_id     text NOT NULL,
    object_id    text,
    revision     bigint,
    outcome      text NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'event_conflict', 'stale', 'redundant',
                                                  'revision_conflict', 'unversioned', 'rejected')),
    reason       text,
    snapshot     jsonb,   -- the parsed snapshot, when the event had one
    payload      bytea NOT NULL, -- the raw event as received
    conflict_id  bigint,
    PRIMARY KEY (tenant_id, received_at, delivery_id, seq)
) PARTITION BY RANGE (received_at);
CREATE INDEX events_record ON events (tenant_id, provider_id, object_type, object_id, revision);
-- The revision-conflict check looks for stale events of one record at one
-- revision on every refused event; this small index answers it directly,
-- even before the planner has statistics.
CREATE INDEX events_stale ON events (tenant_id, provider_id, object_type, object_id, revision) WHERE outcome = 'stale';

-- Catch-alls so an insert outside the prepared daily partitions is never lost.
CREATE TABLE deliveries_default PARTITION OF deliveries DEFAULT;
CREATE TABLE events_default PARTITION OF events DEFAULT;

CREATE TABLE conflicts (
    tenant_id            bigint NOT NULL,
    id                   bigint GENERATED ALWAYS AS IDENTITY,
    provider_id          bigint NOT NULL,
    object_type          text NOT NULL,
    object_id            text NOT NULL,
    revision             bigint NOT NULL,
    accepted_event_id    text NOT NULL,
    accepted_snapshot    jsonb NOT NULL,
    conflicting_event_id text NOT NULL,
    conflicting_snapshot jsonb NOT NULL,
    status               text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'kept', 'adopted')),
    note                 text NOT NULL DEFAULT '',
    resolved_by          text,
    resolved_at          timestamptz,
    detected_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES providers (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX conflicts_status ON conflicts (tenant_id, status, id);

-- Outcome counts per tenant, provider and hour. Each increment lands on one
-- of several shards so that a burst on one tenant does not queue on one row;
-- readers sum the shards.
CREATE TABLE outcome_counters (
    tenant_id   bigint NOT NULL,
    provider_id bigint NOT NULL,
    bucket      timestamptz NOT NULL,
    outcome     text NOT NULL,
    shard       smallint NOT NULL,
    n           bigint NOT NULL,
    PRIMARY KEY (tenant_id, provider_id, bucket, outcome, shard)
);

-- +goose Down
DROP TABLE outcome_counters, conflicts, events, deliveries, accepted_revisions, records,
    idempotency_keys, memberships, users, api_tokens, scopes, provider_secrets, providers, tenants;
