-- +goose Up
-- The change stream out (docs/contract/changes.md). Every accepted change of
-- a tenant's records gets the next position of the tenant's feed. The
-- position is taken from change_heads as the last statement of the
-- transaction that made the change, so the head row's lock is held only
-- until commit: positions are handed out in commit order, without gaps, and
-- a reader that sees a position has seen every position before it.
CREATE TABLE change_heads (
    tenant_id bigint PRIMARY KEY,
    position  bigint NOT NULL
);

CREATE TABLE changes (
    tenant_id         bigint NOT NULL,
    position          bigint NOT NULL,
    type              text NOT NULL
        CHECK (type IN ('record.applied', 'record.deleted', 'record.reset', 'record.erased')),
    provider_id       bigint NOT NULL,
    object_type       text NOT NULL,
    object_id         text NOT NULL,
    revision          bigint,
    previous_revision bigint,
    changed           text[] NOT NULL,
    snapshot          jsonb, -- NULL for a reset or an erasure, and once the record is erased
    event_id          text,
    delivery_id       uuid,
    committed_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, position)
);
-- A record's last change (its previous revision and snapshot), and the
-- changes an erasure empties.
CREATE INDEX changes_record ON changes (tenant_id, provider_id, object_type, object_id, position);

-- Destinations receive the changes they select, pushed by the node that
-- holds their lease. cursor: every change up to it was taken into
-- destination_queue (or did not match).
CREATE TABLE destinations (
    tenant_id       bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    url             text,
    nats_url        text,
    subject         text,
    provider_id     bigint,
    object_type     text,
    types           text[] NOT NULL,
    allow_private   boolean NOT NULL DEFAULT false,
    max_in_flight   int NOT NULL DEFAULT 8 CHECK (max_in_flight BETWEEN 1 AND 64),
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'failing')),
    status_reason   text,
    cursor          bigint NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_success_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK ((url IS NULL) <> (nats_url IS NULL)),
    CHECK ((nats_url IS NULL) = (subject IS NULL))
);
-- The lease scan of the senders.
CREATE INDEX destinations_active ON destinations (lease_until) WHERE status = 'active';

-- A destination's signing secrets: the current one (expires_at NULL) and,
-- for a day after a rotation, the one before it.
CREATE TABLE destination_secrets (
    tenant_id      bigint NOT NULL,
    destination_id bigint NOT NULL,
    id             bigint GENERATED ALWAYS AS IDENTITY,
    key_id         text NOT NULL,
    aad_version    smallint NOT NULL,
    ciphertext     bytea NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    PRIMARY KEY (tenant_id, destination_id, id),
    FOREIGN KEY (tenant_id, destination_id) REFERENCES destinations (tenant_id, id) ON DELETE CASCADE
);

-- The changes a destination has yet to answer 2xx to. Only the lowest
-- position of a record_key is sent at a time.
CREATE TABLE destination_queue (
    tenant_id       bigint NOT NULL,
    destination_id  bigint NOT NULL,
    position        bigint NOT NULL,
    record_key      text NOT NULL,
    committed_at    timestamptz NOT NULL,
    attempts        int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    first_failed_at timestamptz,
    last_error      text,
    PRIMARY KEY (tenant_id, destination_id, position),
    FOREIGN KEY (tenant_id, destination_id) REFERENCES destinations (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX destination_queue_record ON destination_queue (tenant_id, destination_id, record_key, position);

-- Each attempt to deliver a change, kept for the console and the API.
CREATE TABLE destination_attempts (
    tenant_id      bigint NOT NULL,
    destination_id bigint NOT NULL,
    id             bigint GENERATED ALWAYS AS IDENTITY,
    position       bigint NOT NULL,
    attempted_at   timestamptz NOT NULL DEFAULT now(),
    status         int NOT NULL, -- the HTTP status, 0 when there was no answer
    error          text,
    duration_ms    int NOT NULL,
    PRIMARY KEY (tenant_id, destination_id, id),
    FOREIGN KEY (tenant_id, destination_id) REFERENCES destinations (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE destination_attempts, destination_queue, destination_secrets, destinations, changes, change_heads;
