-- +goose Up
-- What each erase erased, by a hash (domain.ErasureKey), so that a queue
-- worker does not apply events queued before the erase to the erased
-- record or lead (internal/queue, domain.DropErased). A row is a few dozen
-- bytes; it is kept as long as the tenant.
CREATE TABLE erasure_tombstones (
    tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind      text NOT NULL CHECK (kind IN ('record', 'lead')),
    key_hash  bytea NOT NULL,
    erased_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind, key_hash)
);

-- +goose Down
DROP TABLE erasure_tombstones;
