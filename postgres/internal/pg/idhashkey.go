package pg

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// The id hash key keys domain.IDHasher: 32 random bytes, one per
// database, sealed under the keyring like a secret. It is made once, by
// the first process holding an encryption key that needs it, and never
// changes: a rekey seals it again, so names hashed before still match.

const (
	// readIDHashKeySQL reads the sealed key, in ScanSealedSecret's columns.
	readIDHashKeySQL = `SELECT 0, 0, 0, key_id, aad_version, ciphertext FROM id_hash_key`
	// createIDHashKeySQL stores a new key unless a node stored one first:
	// nodes starting at once all read the one that won.
	createIDHashKeySQL = `
INSERT INTO id_hash_key (key_id, aad_version, ciphertext) VALUES (@key_id, @aad_version, @ciphertext)
ON CONFLICT (singleton) DO NOTHING`
)

// idHashKeyAAD binds the sealed id hash key to its purpose: no other
// secret's ciphertext opens as it.
func idHashKeyAAD() []byte { return boundAAD("tidemark id hash key v1\x00", 0, 0) }

// SealIDHashKey encrypts the id hash key under the first key.
func (k *Keyring) SealIDHashKey(key []byte) (SealedSecret, error) {
	return k.seal(SealedSecret{AADVersion: AADIDHashKey}, idHashKeyAAD(), string(key))
}

// IDHashes hands out the database's IDHasher, loading (or making) its key
// once per process.
type IDHashes struct {
	pool *pgxpool.Pool
	keys *Keyring

	mu     sync.Mutex
	hasher *domain.IDHasher // nil until loaded
}

// NewIDHashes returns the IDHashes of pool, whose key is sealed with keys.
func NewIDHashes(pool *pgxpool.Pool, keys *Keyring) *IDHashes {
	return &IDHashes{pool: pool, keys: keys}
}

// Hasher returns the IDHasher keyed by the database's id hash key, making
// the key if there is none. Without encryption keys it returns
// domain.LegacyIDHasher (unkeyed), as before the key existed.
func (h *IDHashes) Hasher(ctx context.Context) (domain.IDHasher, error) {
	if !h.keys.CanSeal() {
		return domain.LegacyIDHasher, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasher != nil {
		return *h.hasher, nil
	}
	sealed, err := h.read(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		if err = h.create(ctx); err == nil {
			sealed, err = h.read(ctx)
		}
	}
	if err != nil {
		return domain.IDHasher{}, err
	}
	return h.open(sealed)
}

// open opens the sealed key and keeps its hasher; h.mu is held.
func (h *IDHashes) open(sealed SealedSecret) (domain.IDHasher, error) {
	key, err := h.keys.Open(sealed)
	if err != nil {
		return domain.IDHasher{}, fmt.Errorf("open the id hash key, which names records in the audit log and "+
			"erasure tombstones: %w; set TIDEMARK_ENCRYPTION_KEY to the keys the secrets are stored under", err)
	}
	hasher := domain.NewIDHasher([]byte(key))
	h.hasher = &hasher
	return hasher, nil
}

// Hashers are the keyed IDHasher and domain.LegacyIDHasher, under either
// of which a name may have been written.
func (h *IDHashes) Hashers(ctx context.Context) ([]domain.IDHasher, error) {
	if !h.keys.CanSeal() {
		return []domain.IDHasher{domain.LegacyIDHasher}, nil
	}
	keyed, err := h.Hasher(ctx)
	if err != nil {
		return nil, err
	}
	return []domain.IDHasher{keyed, domain.LegacyIDHasher}, nil
}

// ForReading is the IDHasher a read of hashed names uses: the loaded one,
// or the key read with read (the read pool, so that a console page never
// waits on the ingest pool); without a key stored yet nothing was named
// under one, and it is domain.LegacyIDHasher.
func (h *IDHashes) ForReading(ctx context.Context, read *pgxpool.Pool) (domain.IDHasher, error) {
	if !h.keys.CanSeal() {
		return domain.LegacyIDHasher, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hasher != nil {
		return *h.hasher, nil
	}
	sealed, err := h.readWith(ctx, read)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.LegacyIDHasher, nil
	}
	if err != nil {
		return domain.IDHasher{}, err
	}
	return h.open(sealed)
}

func (h *IDHashes) read(ctx context.Context) (SealedSecret, error) { return h.readWith(ctx, h.pool) }

func (h *IDHashes) readWith(ctx context.Context, pool *pgxpool.Pool) (SealedSecret, error) {
	rows, err := pool.Query(ctx, readIDHashKeySQL)
	if err != nil {
		return SealedSecret{}, Translate(err)
	}
	sealed, err := pgx.CollectExactlyOneRow(rows, ScanSealedSecret)
	if errors.Is(err, pgx.ErrNoRows) {
		return sealed, err
	}
	return sealed, Translate(err)
}

// create stores a new random key sealed under the first key. Unlike a
// new secret it is not refused under a key no secret uses yet
// (CheckSealingKey): an erase or a sign-in must not fail mid key move,
// when every node holds both keys, and a node that lacks the first one
// refuses to start (secretkeys.CheckSecrets counts this key).
func (h *IDHashes) create(ctx context.Context) error {
	key := make([]byte, 32)
	rand.Read(key)
	sealed, err := h.keys.SealIDHashKey(key)
	if err != nil {
		return err
	}
	_, err = h.pool.Exec(ctx, createIDHashKeySQL, pgx.NamedArgs{"key_id": sealed.KeyID,
		"aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	return Translate(err)
}
