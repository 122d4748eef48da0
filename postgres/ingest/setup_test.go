package ingest_test

// The fixtures of the tests of the write path. They build a postgres.Store
// for the tenants and providers, and reach the Writer's internals through
// export_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// setup returns a store on a fresh database with tenant "acme" and its
// standard provider "crm".
func setup(t *testing.T) (*postgres.Store, domain.ProviderEndpoint) {
	t.Helper()
	s, err := postgres.New(testdb.New(t), testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, newProvider(t, s, "acme", "crm")
}

func newProvider(t *testing.T, s *postgres.Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	ctx := asTestCLI(context.Background())
	tn, err := s.Tenant(ctx, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		tn, err = s.CreateTenant(ctx, tenant, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectProvider(ctx, tn.ID, provider, "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Endpoint(ctx, tenant, provider)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// event builds a contact snapshot event; rev < 0 means no revision.
func event(id, contact string, rev int64, snapshot string) domain.Event {
	e := domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"},
		ObjectID: contact, Snapshot: json.RawMessage(snapshot), Timestamp: "2026-11-29T10:00:00Z"}
	if rev >= 0 {
		e.Revision = &rev
	}
	e.Payload = []byte(fmt.Sprintf(`{"type":"contact.snapshot","data":{"contact_id":%q,"revision":%d,"snapshot":%s}}`, contact, rev, snapshot))
	return e
}

func delivery(p domain.ProviderEndpoint) domain.Delivery {
	return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
}

// ingestOne delivers one event and returns its result.
func ingestOne(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, e domain.Event) domain.Result {
	t.Helper()
	r, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{e})
	if err != nil {
		t.Fatalf("ingest %s: %v", e.EventID, err)
	}
	return r[0]
}

func record(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, contact string) (rev int64, snapshot string, count int) {
	t.Helper()
	err := s.Pool().QueryRow(context.Background(),
		`SELECT revision, snapshot::text, application_count FROM records WHERE tenant_id = $1 AND provider_id = $2 AND object_id = $3`,
		p.TenantID, p.ID, contact).Scan(&rev, &snapshot, &count)
	if err != nil {
		t.Fatalf("record %s: %v", contact, err)
	}
	return rev, snapshot, count
}

func wantOutcome(t *testing.T, got domain.Result, want domain.Outcome) {
	t.Helper()
	if got.Outcome != want {
		t.Fatalf("event %s: outcome %s (%s), want %s", got.EventID, got.Outcome, got.Reason, want)
	}
}

// raceTimeout bounds every wait of the race tests, so a lost wake-up or an
// undetected deadlock fails the test instead of hanging it.
const raceTimeout = 30 * time.Second

// racePool opens another pool on the store's database. appName tags its
// backends in pg_stat_activity; the pool is warmed up to maxConns open
// connections so that released goroutines do not queue behind dialing.
func racePool(t *testing.T, s *postgres.Store, appName string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(s.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conns := make([]*pgxpool.Conn, 0, maxConns)
	for range maxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return pool
}

func raceStore(t *testing.T, pool *pgxpool.Pool) *postgres.Store {
	t.Helper()
	st, err := postgres.New(pool, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return st
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

// signup builds a lead.signup event as the standard receiver does.
func signup(t *testing.T, id, email, campaign string) domain.Event {
	t.Helper()
	l, err := domain.NormalizeLead(domain.Lead{Email: email, Name: "Ada", Company: "Example", Campaign: campaign, Source: "webinar"})
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(l)
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"},
		ObjectID: l.Email, Snapshot: snapshot, Payload: snapshot, Lead: &l}
}

// leadCounts returns how many people, accounts, tasks and memberships the
// tenant holds.
func leadCounts(t *testing.T, s *postgres.Store, tenantID int64) (people, accounts, tasks, members int) {
	t.Helper()
	err := s.Pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM people WHERE tenant_id = $1), (SELECT count(*) FROM accounts WHERE tenant_id = $1),
		(SELECT count(*) FROM tasks WHERE tenant_id = $1), (SELECT count(*) FROM campaign_members WHERE tenant_id = $1)`,
		tenantID).Scan(&people, &accounts, &tasks, &members)
	if err != nil {
		t.Fatal(err)
	}
	return
}

// change builds a HubSpot-style property event for contact c-1: property
// set to value at revision (occurredAt). A property of "$created" or
// "$deleted" marks creation or deletion.
func change(id, property, value string, revision int64) domain.Event {
	snapshot := "{}"
	if !strings.HasPrefix(property, "$") {
		v, _ := json.Marshal(value)
		snapshot = fmt.Sprintf(`{%q:%s}`, property, v)
	}
	action := "propertyChange"
	switch property {
	case domain.PropertyCreated:
		action = "creation"
	case domain.PropertyDeleted:
		action = "deletion"
	}
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: action},
		ObjectID: "c-1", Revision: &revision, Snapshot: json.RawMessage(snapshot), Property: property,
		Payload: []byte(snapshot)}
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
	s, err := postgres.Open(pool, postgres.Options{Keys: [][]byte{testKey}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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

// testActor is who the tests' changes are recorded as made by.
var testActor = domain.Actor{Kind: domain.ActorOperator, Name: "ann@example.com", Address: "192.0.2.7"}

// asTestCLI is ctx with the command line as the actor.
func asTestCLI(ctx context.Context) context.Context {
	return domain.WithActor(ctx, domain.Actor{Kind: domain.ActorCLI, Name: "test"})
}

// asTest is ctx carrying testActor, as the console's requests carry theirs.
func asTest(ctx context.Context) context.Context { return domain.WithActor(ctx, testActor) }

// storeConfigured opens a store on url with a pool configured by configure.
func storeConfigured(t testing.TB, url string, configure func(*pgxpool.Config)) *postgres.Store {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.New(pool, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// logStore opens a store on pool that logs into the returned buffer.
func logStore(t *testing.T, pool *pgxpool.Pool) (*postgres.Store, *logBuffer) {
	t.Helper()
	log := &logBuffer{}
	s, err := postgres.Open(pool, postgres.Options{Keys: [][]byte{testKey}, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
