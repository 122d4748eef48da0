package postgres

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestPrepareIngestPlansBeforeTheFirstDelivery: a connection made by a pool
// with PrepareIngest holds the outcome statement's generic plan before any
// delivery, with nothing written, and the first delivery runs on that
// statement rather than preparing and planning its own.
func TestPrepareIngestPlansBeforeTheFirstDelivery(t *testing.T) {
	t.Parallel()
	s := storeConfigured(t, testdb.NewURL(t), func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // every statement below runs on the one prepared connection
		cfg.AfterConnect = PrepareIngest
	})
	pool := s.Pool()
	p := newProvider(t, s, "acme", "crm")
	ctx := context.Background()

	outcome := func() (prepared, generic int) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements
			WHERE statement = $1`, outcomeSQL.sql).Scan(&prepared, &generic)
		if err != nil {
			t.Fatal(err)
		}
		return prepared, generic
	}
	if prepared, generic := outcome(); prepared != 1 || generic != 1 {
		t.Fatalf("before any delivery the outcome statement is prepared %d times with %d generic plans; want 1 and 1", prepared, generic)
	}
	var written int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries) + (SELECT count(*) FROM events)
		+ (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM outcome_counters)`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Fatalf("preparing the connection wrote %d rows", written)
	}

	if r := ingest(t, s, p, event("e1", "c1", 1, `{"v":1}`)); r.Outcome != domain.Applied {
		t.Fatalf("first delivery on a prepared connection: %s (%s)", r.Outcome, r.Reason)
	}
	if prepared, generic := outcome(); prepared != 1 || generic != 2 {
		t.Fatalf("after one delivery the outcome statement is prepared %d times with %d generic plans used; want 1 and 2", prepared, generic)
	}
}

// TestReadPoolIsNotPreparedForIngest: the read pool, derived from the
// ingest pool's configuration, neither prepares its connections for
// ingest nor keeps any open.
func TestReadPoolIsNotPreparedForIngest(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(testdb.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AfterConnect, cfg.MinConns = PrepareIngest, 4
	rc := ReadPoolConfig(cfg, 2, time.Second)
	if rc.AfterConnect != nil || rc.MinConns != 0 {
		t.Fatalf("read pool: AfterConnect set %v, %d connections kept open; want neither", rc.AfterConnect != nil, rc.MinConns)
	}
}

// TestPrepareIngestOnANewDatabase: serve connects before it migrates, so
// on a new database the ingest statements name tables that do not exist
// yet. The connection still opens, the migration runs on it, and ingest
// works after.
func TestPrepareIngestOnANewDatabase(t *testing.T) {
	t.Parallel()
	s := storeConfigured(t, testdb.NewEmptyURL(t), func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1
		cfg.AfterConnect = PrepareIngest
	})
	ctx := context.Background()
	if err := s.Pool().Ping(ctx); err != nil {
		t.Fatalf("connect to a database not yet migrated: %v", err)
	}
	if err := Migrate(ctx, s.Pool(), io.Discard); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, s, "acme", "crm")
	if r := ingest(t, s, p, event("e1", "c1", 1, `{"v":1}`)); r.Outcome != domain.Applied {
		t.Fatalf("delivery after the migration: %s (%s)", r.Outcome, r.Reason)
	}
}
