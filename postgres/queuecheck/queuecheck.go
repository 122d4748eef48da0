// Package queuecheck answers what a queue worker asks before it applies a
// message: whether its delivery is already recorded, and whether records
// or leads it names were erased since it arrived.
package queuecheck

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Checker answers a queue worker's questions.
type Checker struct {
	pool *pgxpool.Pool
	ids  *pg.IDHashes
}

// New returns a Checker on pools' write pool, whose tombstones are keyed
// by ids.
func New(pools pg.Pools, ids *pg.IDHashes) *Checker { return &Checker{pool: pools.Write, ids: ids} }

// deliveryRecordedSQL finds one delivery by its primary key, so that only
// the partition of its receipt time is read.
const deliveryRecordedSQL = `
SELECT EXISTS (SELECT FROM deliveries WHERE tenant_id = @tenant_id AND received_at = @received_at AND id = @id)`

// DeliveryRecorded implements domain.QueueStore: a queue worker asks it
// about a message delivered again, whose delivery may have been committed
// by a worker that died before acknowledging it. Ingesting such a delivery
// again would fail on the delivery's primary key, so it is never applied
// twice either way.
func (s *Checker) DeliveryRecorded(ctx context.Context, tenantID int64, id string, receivedAt time.Time) (bool, error) {
	var found bool
	err := s.pool.QueryRow(ctx, deliveryRecordedSQL,
		pgx.NamedArgs{"tenant_id": tenantID, "received_at": receivedAt, "id": id}).Scan(&found)
	return found, pg.Translate(err)
}

// Erasure tombstones (domain/erasure.go): written by every erase in its
// transaction, read by queue workers.

const tombstoneSQL = `
INSERT INTO erasure_tombstones (tenant_id, kind, key_hash, erased_at) VALUES (@tenant_id, @kind, @key_hash, now())
ON CONFLICT (tenant_id, kind, key_hash) DO UPDATE SET erased_at = EXCLUDED.erased_at`

// erasedSinceSQL answers the positions (from 1) of the keys erased after
// @since.
const erasedSinceSQL = `
SELECT k.i FROM unnest(@kinds::text[], @hashes::bytea[]) WITH ORDINALITY AS k (kind, key_hash, i)
JOIN erasure_tombstones t ON t.tenant_id = @tenant_id AND t.kind = k.kind AND t.key_hash = k.key_hash
WHERE t.erased_at > @since`

// WriteTombstone records in tx, the erasure's transaction, that key was
// erased.
func WriteTombstone(ctx context.Context, tx pgx.Tx, tenantID int64, key domain.ErasureKey) error {
	_, err := tx.Exec(ctx, tombstoneSQL, pgx.NamedArgs{"tenant_id": tenantID, "kind": key.Kind, "key_hash": key.Hash[:]})
	return err
}

// ErasureHashers implements domain.ErasureChecker: tombstones are keyed,
// and those written before the key existed are not, so a delivery queued
// before an upgrade is still checked against them.
func (s *Checker) ErasureHashers(ctx context.Context) ([]domain.IDHasher, error) {
	return s.ids.Hashers(ctx)
}

// ErasedSince implements domain.ErasureChecker.
func (s *Checker) ErasedSince(ctx context.Context, tenantID int64, since time.Time, keys []domain.ErasureKey) ([]bool, error) {
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
