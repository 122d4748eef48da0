package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tidemark/tidemark/migrations"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Migrate applies pending migrations under a PostgreSQL session advisory
// lock, so several instances starting together apply each migration once.
// Progress lines go to log, one a migration.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log io.Writer) error {
	results, err := migrate(ctx, pool)
	for _, r := range results {
		fmt.Fprintf(log, "applied migration %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
	}
	return err
}

// MigrateSummary applies pending migrations as Migrate does, and writes
// one line for them all to log (applied 61 migrations (00001 to 00061) in
// 1.2s), none when there were none.
func MigrateSummary(ctx context.Context, pool *pgxpool.Pool, log io.Writer) error {
	start := time.Now()
	results, err := migrate(ctx, pool)
	switch n := len(results); {
	case n == 1:
		fmt.Fprintf(log, "applied 1 migration (%05d) in %s\n", results[0].Source.Version, time.Since(start).Round(1e6))
	case n > 1:
		fmt.Fprintf(log, "applied %d migrations (%05d to %05d) in %s\n", n, results[0].Source.Version,
			results[n-1].Source.Version, time.Since(start).Round(1e6))
	}
	return err
}

// migrate applies the pending migrations and returns those applied.
func migrate(ctx context.Context, pool *pgxpool.Pool) ([]*goose.MigrationResult, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	// Poll for the lock every second (goose's default is every 5), for up
	// to five minutes, so a second node starting alongside waits briefly.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		// Those applied before the failure are still reported.
		var partial *goose.PartialError
		if errors.As(err, &partial) {
			results = partial.Applied
		}
		return results, fmt.Errorf("apply migrations: %w", pg.Translate(err))
	}
	return results, nil
}
