package postgres

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tidemark/tidemark/migrations"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Migrate applies pending migrations under a PostgreSQL session advisory
// lock, so several instances starting together apply each migration once.
// Progress lines go to log.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log io.Writer) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	// Poll for the lock every second (goose's default is every 5), for up
	// to five minutes, so a second node starting alongside waits briefly.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", pg.Translate(err))
	}
	for _, r := range results {
		fmt.Fprintf(log, "applied migration %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
	}
	return nil
}
