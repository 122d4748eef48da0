package alerting_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	domainalerting "github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/internal/alerting"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

var key = []byte("0123456789abcdef0123456789abcdef")

// node opens a store on its own pool of url, named app in
// pg_stat_activity.
func node(t *testing.T, url, app string) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := postgres.New(pool, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// silentProvider connects provider crm to tenant acme, with every rule
// but provider_silent disabled; it returns the endpoint.
func silentProvider(t *testing.T, s *postgres.Store, pool *pgxpool.Pool) domain.ProviderEndpoint {
	t.Helper()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tn, err := s.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectProvider(ctx, tn.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range domainalerting.Rules {
		if r != domainalerting.ProviderSilent {
			if _, err := pool.Exec(ctx, `INSERT INTO alert_rules (tenant_id, rule, enabled, threshold, window_seconds)
				VALUES ($1, $2, false, 1, 60)`, tn.ID, string(r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := s.Endpoint(ctx, "acme", "crm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func deliver(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, at time.Time) {
	t.Helper()
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: at,
		Status: 200, Signature: domain.SignatureValid}
	rev := int64(1)
	e := domain.Event{EventID: d.ID, Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, ObjectID: d.ID,
		Revision: &rev, Snapshot: []byte(`{"a":1}`), Payload: []byte(`{}`)}
	if _, err := s.Ingest(context.Background(), d, p, []domain.Event{e}); err != nil {
		t.Fatal(err)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEvaluationRunsOnOneNodeOfTwo: two nodes, each with its own pool.
// While node A evaluates (held inside its transaction by a row lock the
// test takes), pg_locks shows A's session holding the evaluation's
// advisory lock and node B's evaluation does nothing (Ran false); A then
// finishes. Then both nodes race, three evaluations each at every time,
// through a provider going silent and speaking again ten times: every
// condition fires once and resolves once in all, and the alerts table
// holds five alerts and ten events, never two firing at once.
func TestEvaluationRunsOnOneNodeOfTwo(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	sa, poolA := node(t, url, "tidemark node a")
	sb, _ := node(t, url, "tidemark node b")
	a, b := alerting.Evaluator{Store: sa}, alerting.Evaluator{Store: sb}
	p := silentProvider(t, sa, poolA)
	ctx := context.Background()
	t0 := time.Now()

	// A fires, then evaluates again while the test holds the firing alert.
	if ev, err := a.Evaluate(ctx, t0.Add(7*time.Hour)); err != nil || !ev.Ran || len(ev.Fired) != 1 {
		t.Fatalf("node A's first evaluation: %+v, %v", ev, err)
	}
	blocker, err := poolA.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `SELECT FROM alerts FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	deliver(t, sa, p, t0.Add(7*time.Hour+time.Minute))
	type result struct {
		ev  domainalerting.Evaluation
		err error
	}
	doneA := make(chan result, 1)
	go func() {
		ev, err := a.Evaluate(ctx, t0.Add(7*time.Hour+2*time.Minute))
		doneA <- result{ev, err}
	}()
	holder := ""
	for deadline := time.Now().Add(10 * time.Second); holder == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		err := poolA.QueryRow(ctx, `SELECT coalesce(max(a.application_name), '') FROM pg_locks l
			JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&holder)
		if err != nil {
			t.Fatal(err)
		}
	}
	if holder != "tidemark node a" {
		t.Fatalf("the advisory lock is held by %q while node A evaluates, want node A", holder)
	}
	if ev, err := b.Evaluate(ctx, t0.Add(7*time.Hour+2*time.Minute)); err != nil || ev.Ran {
		t.Fatalf("node B evaluated while node A was evaluating: %+v, %v", ev, err)
	}
	select {
	case r := <-doneA:
		t.Fatalf("node A finished while its alert was locked: %+v", r)
	default:
	}
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-doneA; r.err != nil || !r.ev.Ran || len(r.ev.Resolved) != 1 {
		t.Fatalf("node A's evaluation: %+v, %v", r.ev, r.err)
	}

	// The race.
	base := t0.Add(7*time.Hour + 2*time.Minute)
	for round := 1; round <= 10; round++ {
		now := base.Add(time.Duration(round) * 7 * time.Hour)
		if round%2 == 0 {
			deliver(t, sa, p, now.Add(-time.Minute))
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		ran, changes := 0, 0
		for i := range 6 {
			e := []alerting.Evaluator{a, b}[i%2]
			wg.Go(func() {
				ev, err := e.Evaluate(ctx, now)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
				}
				if ev.Ran {
					ran++
				}
				changes += len(ev.Fired) + len(ev.Resolved)
			})
		}
		wg.Wait()
		if ran == 0 || changes != 1 {
			t.Fatalf("round %d: %d evaluations ran and changed %d alerts, want at least one to run and one change", round, ran, changes)
		}
		t.Logf("round %d: %d of 6 evaluations ran", round, ran)
	}
	if n := count(t, poolA, `SELECT count(*) FROM alerts`); n != 6 {
		t.Errorf("%d alerts, want 6 (one per silence)", n)
	}
	if n := count(t, poolA, `SELECT count(*) FROM alert_events`); n != 12 {
		t.Errorf("%d alert events, want 12", n)
	}
	if n := count(t, poolA, `SELECT count(*) FROM alerts WHERE resolved_at IS NULL`); n != 0 {
		t.Errorf("%d alerts firing after the last round, want 0", n)
	}
}

// TestRunEvaluatesEveryInterval: Run evaluates at once and at every tick
// with its clock, firing the silent provider's alert once.
func TestRunEvaluatesEveryInterval(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	s, pool := node(t, url, "tidemark")
	silentProvider(t, s, pool)
	var mu sync.Mutex
	var calls int
	later := time.Now().Add(7 * time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); calls++; return later }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- alerting.Evaluator{Store: s, Now: clock, Every: 20 * time.Millisecond}.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := calls
		mu.Unlock()
		if n >= 5 {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls < 5 {
		t.Fatalf("%d evaluations in 10 s at a 20 ms interval", calls)
	}
	if n := count(t, pool, `SELECT count(*) FROM alerts WHERE rule = 'provider_silent'`); n != 1 {
		t.Errorf("%d alerts after %d evaluations, want 1", n, calls)
	}
}
