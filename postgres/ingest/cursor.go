package ingest

import (
	"context"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// cursorMove is the compare-and-set of a pulled source's cursor (a
// journal's offset, a CDC stream's replay id) that commits with the
// delivery of what was read after it: stmt updates the cursor's row only
// where it still holds the position read after, with args and @applied,
// the delivery's events applied (for a statement that counts them), and,
// with clock, @minute and @previous_minute, the minute of the
// transaction's time and the one before; moved is the error when no row
// moved.
type cursorMove struct {
	stmt  pg.Statement
	args  pgx.NamedArgs
	clock bool
	moved error
}

// ingestMoving writes a pulled delivery as Replay writes one (limits,
// scopes, PostgreSQL's limits, lost deadlocks), alone in a transaction
// that moves the cursor before it commits: of two nodes writing what they
// read after one position, the second rolls back with m.moved.
func (w *Writer) ingestMoving(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, m cursorMove) ([]domain.Result, error) {
	return w.write(ctx, replay, d, p, events, func(ctx context.Context, tx pgx.Tx, results []domain.Result) error {
		applied := 0
		for _, r := range results {
			if r.Outcome == domain.Applied {
				applied++
			}
		}
		args := maps.Clone(m.args)
		args["applied"] = applied
		if m.clock {
			now, err := pg.Now(ctx, tx)
			if err != nil {
				return err
			}
			args["minute"], args["previous_minute"] = now.Truncate(time.Minute), now.Truncate(time.Minute).Add(-time.Minute)
		}
		tag, err := tx.Exec(ctx, m.stmt.SQL, m.stmt.Args(args)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return m.moved
		}
		return nil
	})
}
