package postgres

import (
	"context"
	"io"
	"io/fs"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/migrations"
)

// TestConcurrentMigrations starts several migrators on an empty database at
// once, as several app nodes starting together would: all succeed and each
// migration is applied once.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)
	const nodes = 4
	var wg sync.WaitGroup
	errs := make([]error, nodes)
	start := make(chan struct{})
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pgxpool.New(context.Background(), url)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			<-start
			errs[i] = Migrate(context.Background(), pool, io.Discard)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	files, _ := fs.Glob(migrations.FS, "*.sql")
	var applied, tables int
	pool.QueryRow(context.Background(), `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied)
	pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE tablename = 'records'`).Scan(&tables)
	if applied != len(files) || tables != 1 {
		t.Fatalf("%d migrations recorded and %d records tables, want %d and 1", applied, tables, len(files))
	}
}
