package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Erasure tombstones (domain/erasure.go): written by every erase in its
// transaction, read by queue workers.

const tombstoneSQL = `
INSERT INTO erasure_tombstones (tenant_id, kind, key_hash) VALUES (@tenant_id, @kind, @key_hash)
ON CONFLICT (tenant_id, kind, key_hash) DO UPDATE SET erased_at = now()`

// erasedSinceSQL answers the positions (from 1) of the keys erased after
// @since.
const erasedSinceSQL = `
SELECT k.i FROM unnest(@kinds::text[], @hashes::bytea[]) WITH ORDINALITY AS k (kind, key_hash, i)
JOIN erasure_tombstones t ON t.tenant_id = @tenant_id AND t.kind = k.kind AND t.key_hash = k.key_hash
WHERE t.erased_at > @since`

func writeTombstone(ctx context.Context, tx pgx.Tx, tenantID int64, key domain.ErasureKey) error {
	_, err := tx.Exec(ctx, tombstoneSQL, pgx.NamedArgs{"tenant_id": tenantID, "kind": key.Kind, "key_hash": key.Hash[:]})
	return err
}

// ErasedSince implements domain.ErasureChecker.
func (s *queue) ErasedSince(ctx context.Context, tenantID int64, since time.Time, keys []domain.ErasureKey) ([]bool, error) {
	kinds, hashes := make([]string, len(keys)), make([][]byte, len(keys))
	for i, k := range keys {
		kinds[i], hashes[i] = k.Kind, k.Hash[:]
	}
	rows, err := s.pool.Query(ctx, erasedSinceSQL, pgx.NamedArgs{"tenant_id": tenantID, "kinds": kinds,
		"hashes": hashes, "since": since})
	if err != nil {
		return nil, pg.Translate(err)
	}
	hits, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, pg.Translate(err)
	}
	erased := make([]bool, len(keys))
	for _, i := range hits {
		erased[i-1] = true
	}
	return erased, nil
}
