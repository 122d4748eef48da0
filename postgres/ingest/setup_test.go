package ingest_test

// The fixtures of the tests of the write path. They build a postgres.Store
// for the tenants and providers, and reach the Writer's internals through
// export_test.go.

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testlog"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// raceTimeout bounds every wait of the race tests, so a lost wake-up or an
// undetected deadlock fails the test instead of hanging it.
const raceTimeout = 30 * time.Second

// createTrigger runs a test's CREATE FUNCTION and CREATE TRIGGER on a
// tenant table, on a connection that lets Citus create the trigger on
// every shard (PostgreSQL keeps the setting as a placeholder).
func createTrigger(t *testing.T, s *postgres.Store, ddl string) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	function, trigger, _ := strings.Cut(ddl, "\nCREATE TRIGGER")
	for _, sql := range []string{`SET citus.enable_unsafe_triggers = on`, function, "CREATE TRIGGER" + trigger} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// counters sums outcome_counters over shards and hours, per outcome.
func counters(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint) map[domain.Outcome]int {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(),
		`SELECT outcome, sum(n)::bigint FROM outcome_counters WHERE tenant_id = $1 AND provider_id = $2 GROUP BY outcome`,
		p.TenantID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[domain.Outcome]int{}
	for rows.Next() {
		var o string
		var n int64
		if err := rows.Scan(&o, &n); err != nil {
			t.Fatal(err)
		}
		m[domain.Outcome(o)] = int(n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// await waits for ch to close or receive, failing the test after raceTimeout.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(raceTimeout):
		t.Fatalf("timed out after %s waiting for %s", raceTimeout, what)
		panic("unreachable")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type ingestReply struct {
	result domain.Result
	err    error
}

// ingestAsync ingests e in its own delivery on a new goroutine.
func ingestAsync(ctx context.Context, s *postgres.Store, p domain.ProviderEndpoint, e domain.Event) <-chan ingestReply {
	ch := make(chan ingestReply, 1)
	go func() {
		rs, err := s.Ingest(ctx, delivery(p), p, []domain.Event{e})
		var r domain.Result
		if err == nil {
			r = rs[0]
		}
		ch <- ingestReply{r, err}
	}()
	return ch
}

// dbNow is the database's clock, which decides what is in the future.
func dbNow(t *testing.T, s *postgres.Store) time.Time {
	t.Helper()
	var now time.Time
	if err := s.Pool().QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// dated is a snapshot event whose revision is the timestamp at, as the
// Salesforce, HubSpot and Shippo receivers build them.
func dated(id, contact string, at time.Time, snapshot string) domain.Event {
	e := event(id, contact, at.UnixMicro(), snapshot)
	e.RevisionTime = at
	return e
}

// tableCount counts the tenant's rows of a table.
func tableCount(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, table string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE tenant_id = $1", p.TenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// nodeStore opens a store with a small pool of its own on url.
func nodeStore(t *testing.T, url string) *postgres.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 3
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.Open(postgres.Pools{Write: pool}, postgres.Options{Keys: [][]byte{testKey}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pollFor polls cond until it holds, failing the test after limit, and
// returns how long it took.
func pollFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// storeConfigured opens a store on url with a pool configured by configure.
func storeConfigured(t testing.TB, url string, configure func(*pgxpool.Config)) *postgres.Store {
	t.Helper()
	return pgtest.StoreConfigured(t, postgres.New, url, configure)
}

// logStore opens a store on pool that logs into the returned buffer.
func logStore(t *testing.T, pool *pgxpool.Pool) (*postgres.Store, *testlog.Buffer) {
	t.Helper()
	logger, log := testlog.Logger()
	s, err := postgres.Open(postgres.Pools{Write: pool}, postgres.Options{Keys: [][]byte{testKey}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// The package's names for the test kit (postgres/internal/pgtest).
var (
	testKey     = pgtest.Key
	event       = pgtest.Event
	delivery    = pgtest.Delivery
	wantOutcome = pgtest.WantOutcome
	change      = pgtest.Change
	asTestCLI   = pgtest.AsCLI
	asTest      = pgtest.AsOperator
)

// setup returns a store on a fresh database with tenant "acme" and its
// standard provider "crm".
func setup(t *testing.T) (*postgres.Store, domain.ProviderEndpoint) {
	t.Helper()
	return pgtest.Setup(t, postgres.New)
}

func newProvider(t *testing.T, s *postgres.Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	return pgtest.Provider(t, s, tenant, provider)
}

// ingestOne delivers one event and returns its result.
func ingestOne(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, e domain.Event) domain.Result {
	t.Helper()
	return pgtest.Ingest(t, s, p, e)
}

func record(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, contact string) (rev int64, snapshot string, count int) {
	t.Helper()
	return pgtest.Record(t, s.Pool(), p, contact)
}

// racePool opens another pool on the store's database, warmed up to
// maxConns connections tagged appName in pg_stat_activity.
func racePool(t *testing.T, s *postgres.Store, appName string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	return pgtest.WarmPool(t, s.Pool().Config().ConnString(), appName, maxConns)
}

func raceStore(t *testing.T, pool *pgxpool.Pool) *postgres.Store {
	t.Helper()
	return pgtest.On(t, postgres.New, pool)
}

func signup(t *testing.T, id, email, campaign string) domain.Event {
	t.Helper()
	return pgtest.Signup(t, id, email, campaign)
}

func leadCounts(t *testing.T, s *postgres.Store, tenantID int64) (people, accounts, tasks, members int) {
	t.Helper()
	return pgtest.LeadCounts(t, s.Pool(), tenantID)
}
