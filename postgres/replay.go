package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// Replays (domain/replay.go). A replay is written like any delivery
// (ingestWith: limits, scopes, PostgreSQL's limits, lost deadlocks), alone
// in an explicit transaction that then records, once the outcomes are
// known, either its audit entry (one delivery by hand) or its job's new
// position and counts (a step of a bulk job). The job's row is updated
// last and only by the worker that holds it, so a step either counts
// exactly once or is not stored at all.

// Replay implements domain.ReplayService.
func (s *Store) Replay(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	if d.ReplayOf == "" {
		return nil, domain.Errorf(domain.EINTERNAL, "replay of delivery %s names no original", d.ID)
	}
	return s.ingestWith(ctx, d, p, events, func(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
		return s.writeReplay(ctx, d, p, events, func(tx pgx.Tx, results []domain.Result) error {
			summary := "replayed as delivery " + d.ID
			if counts := domain.CountsText(domain.CountResults(results)); counts != "" {
				summary += ": " + counts
			}
			return pg.Audit(ctx, tx, p.TenantID, domain.ReplayAction, "delivery "+d.ReplayOf, summary)
		})
	})
}

// ReplayStep implements domain.ReplayService.
func (s *Store) ReplayStep(ctx context.Context, step domain.ReplayStep, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	return s.ingestWith(ctx, d, p, events, func(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
		return s.writeReplay(ctx, d, p, events, func(tx pgx.Tx, results []domain.Result) error {
			return advance(ctx, tx, step, domain.CountResults(results))
		})
	})
}

// writeReplay writes a replay's statements as one pipelined batch inside a
// transaction, then runs then with the outcomes before committing.
func (s *Store) writeReplay(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event,
	then func(tx pgx.Tx, results []domain.Result) error) ([]domain.Result, error) {
	var results []domain.Result
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		results = s.queueDelivery(batch, d, p, events, rand.IntN(s.counterShards))
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		return then(tx, results)
	})
	return results, err
}
