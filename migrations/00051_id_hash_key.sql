-- +goose Up
-- The id hash key (review 4's L5): 32 random bytes, one per database,
-- under which audit targets, erasure tombstones and the names of refused
-- sign-ins are hashed (HMAC-SHA256, domain.IDHasher), so that nobody can
-- confirm a name by hashing a guess. The first process holding
-- TIDEMARK_ENCRYPTION_KEY that needs it creates it, sealed under that key
-- like a secret (aad_version 5); `tidemark secrets rekey` seals it again.
-- It never changes, so names written before a rekey still match.
CREATE TABLE id_hash_key (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key_id      text NOT NULL,
    aad_version smallint NOT NULL,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE id_hash_key;
