package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/replay"
)

// Replays (domain/replay.go). A replay is written like any delivery
// (ingest.Writer.Replay: limits, scopes, PostgreSQL's limits, lost
// deadlocks), alone in an explicit transaction that then records, once the
// outcomes are known, either its audit entry (one delivery by hand) or its
// job's new position and counts (a step of a bulk job). The job's row is
// updated last and only by the worker that holds it, so a step either
// counts exactly once or is not stored at all.

// Replay implements domain.ReplayService.
func (s *Store) Replay(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	if d.ReplayOf == "" {
		return nil, domain.Errorf(domain.EINTERNAL, "replay of delivery %s names no original", d.ID)
	}
	return s.Writer.Replay(ctx, d, p, events, func(ctx context.Context, tx pgx.Tx, results []domain.Result) error {
		summary := "replayed as delivery " + d.ID
		if counts := domain.CountsText(domain.CountResults(results)); counts != "" {
			summary += ": " + counts
		}
		return pg.Audit(ctx, tx, p.TenantID, domain.ReplayAction, "delivery "+d.ReplayOf, summary)
	})
}

// ReplayStep implements domain.ReplayService.
func (s *Store) ReplayStep(ctx context.Context, step domain.ReplayStep, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	return s.Writer.Replay(ctx, d, p, events, func(ctx context.Context, tx pgx.Tx, results []domain.Result) error {
		return replay.Advance(ctx, tx, step, domain.CountResults(results))
	})
}
