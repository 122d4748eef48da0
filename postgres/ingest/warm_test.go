package ingest_test

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// TestPrepareIngestPlansBeforeTheFirstDelivery: a connection made by a pool
// with PrepareIngest holds the outcome statement's generic plan before any
// delivery, with nothing written, and the first deliveries of every kind
// (a whole snapshot, a property change, both, a lead signup) run on the
// statements it prepared rather than preparing and planning their own.
func TestPrepareIngestPlansBeforeTheFirstDelivery(t *testing.T) {
	t.Parallel()
	testdb.SkipOnCitus(t, "on Citus ingest runs on custom plans: Citus cannot plan its INSERT ... SELECT generically (genericPlansSQL)")
	s := storeConfigured(t, testdb.NewURL(t), func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1 // every statement below runs on the one prepared connection
		cfg.AfterConnect = ingest.PrepareIngest
	})
	pool := s.Pool()
	p := newProvider(t, s, "acme", "crm")
	ctx := context.Background()

	outcome := func() (prepared, generic int) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements
			WHERE statement = $1`, ingest.OutcomeSQL).Scan(&prepared, &generic)
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

	// What the connection has prepared, but for the insert of a scope not
	// seen before, which is no ingest statement.
	statements := func() []string {
		t.Helper()
		rows, _ := pool.Query(ctx, `SELECT statement FROM pg_prepared_statements WHERE statement <> $1 ORDER BY 1`,
			ingest.EnsureScopeSQL)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := statements()
	for _, events := range [][]domain.Event{
		{event("e1", "c1", 1, `{"v":1}`)},
		{change("e2", "email", "ada@example.com", 2)},
		{event("e3", "c3", 1, `{"v":1}`), change("e4", "jobtitle", "CTO", 3)},
		{signup(t, "e5", "ada@example.com", "webinar")},
	} {
		for i := range events {
			events[i].Seq = i
		}
		results, err := s.Ingest(ctx, delivery(p), p, events)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if r.Outcome != domain.Applied {
				t.Fatalf("event %s on a prepared connection: %s (%s)", r.EventID, r.Outcome, r.Reason)
			}
		}
	}
	if after := statements(); !slices.Equal(after, before) {
		t.Fatalf("the deliveries prepared %d statements more than PrepareIngest had: %q",
			len(after)-len(before), slices.DeleteFunc(after, func(st string) bool { return slices.Contains(before, st) }))
	}
	if prepared, generic := outcome(); prepared != 1 || generic != 5 {
		t.Fatalf("after four deliveries the outcome statement is prepared %d times with %d generic plans used; want 1 and 5", prepared, generic)
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
	cfg.AfterConnect, cfg.MinConns = ingest.PrepareIngest, 4
	rc := postgres.ReadPoolConfig(cfg, 2, time.Second)
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
		cfg.AfterConnect = ingest.PrepareIngest
	})
	ctx := context.Background()
	if err := s.Pool().Ping(ctx); err != nil {
		t.Fatalf("connect to a database not yet migrated: %v", err)
	}
	if err := postgres.Migrate(ctx, s.Pool(), io.Discard); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, s, "acme", "crm")
	if r := ingestOne(t, s, p, event("e1", "c1", 1, `{"v":1}`)); r.Outcome != domain.Applied {
		t.Fatalf("delivery after the migration: %s (%s)", r.Outcome, r.Reason)
	}
}
