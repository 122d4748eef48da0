package alertcheck_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/alertcheck"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// stored is an alert as the table holds it.
type stored struct {
	Tenant   int64
	Rule     string
	Subject  string
	Summary  string
	Value    int64
	Started  time.Time
	Resolved *time.Time
	ResValue *int64
}

func alertsOf(t *testing.T, pool *pgxpool.Pool) []stored {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT tenant_id, rule, subject, summary, value, started_at, resolved_at, resolved_value
		FROM alerts ORDER BY tenant_id, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []stored
	for rows.Next() {
		var a stored
		if err := rows.Scan(&a.Tenant, &a.Rule, &a.Subject, &a.Summary, &a.Value, &a.Started, &a.Resolved, &a.ResValue); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// events lists the alert events as "type rule subject", in order.
func events(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT e.type || ' ' || a.rule || ' ' || a.subject FROM alert_events e
		JOIN alerts a ON a.tenant_id = e.tenant_id AND a.id = e.alert_id ORDER BY e.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// only leaves rule enabled in the tenant, with threshold and window
// (0: the default's), and disables the others.
func only(t *testing.T, pool *pgxpool.Pool, tenantID int64, rule alerting.Rule, threshold int64, window time.Duration) {
	t.Helper()
	for _, r := range alerting.Rules {
		c := alerting.Default(r)
		if threshold > 0 {
			c.Threshold = threshold
		}
		if window > 0 {
			c.Window = window
		}
		setRule(t, pool, tenantID, r, r == rule, c.Threshold, c.Window)
	}
}

func setRule(t *testing.T, pool *pgxpool.Pool, tenantID int64, rule alerting.Rule, enabled bool, threshold int64, window time.Duration) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO alert_rules (tenant_id, rule, enabled, threshold, window_seconds)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, rule) DO UPDATE
		SET enabled = EXCLUDED.enabled, threshold = EXCLUDED.threshold, window_seconds = EXCLUDED.window_seconds`,
		tenantID, string(rule), enabled, threshold, int64(window/time.Second))
	if err != nil {
		t.Fatal(err)
	}
}

func evaluate(t *testing.T, s alerting.Evaluator, at time.Time) alerting.Evaluation {
	t.Helper()
	return evaluateWith(t, s, at, alerting.QueueFacts{Known: true})
}

// evaluateWith evaluates at with what queued mode's stream said.
func evaluateWith(t *testing.T, s alerting.Evaluator, at time.Time, queue alerting.QueueFacts) alerting.Evaluation {
	t.Helper()
	ev, err := s.EvaluateAlerts(context.Background(), at, queue)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Ran {
		t.Fatal("the evaluation did not run: nothing else holds its lock")
	}
	return ev
}

// quiet evaluates at and fails unless nothing fired or resolved.
func quiet(t *testing.T, s alerting.Evaluator, pool *pgxpool.Pool, at time.Time) {
	t.Helper()
	before := events(t, pool)
	ev := evaluate(t, s, at)
	if len(ev.Fired)+len(ev.Resolved) > 0 {
		t.Fatalf("evaluation at %s fired %v and resolved %v, want nothing", at, ev.Fired, ev.Resolved)
	}
	if after := events(t, pool); len(after) != len(before) {
		t.Fatalf("evaluation at %s wrote events %q after %q", at, after[len(before):], before)
	}
}

func wantEvents(t *testing.T, pool *pgxpool.Pool, want ...string) {
	t.Helper()
	if got := events(t, pool); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("alert events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// deliver ingests one signed delivery to p received at at.
func deliver(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, at time.Time, id string) {
	t.Helper()
	d := pgtest.Delivery(p)
	d.ReceivedAt = at
	if _, err := s.Ingest(context.Background(), d, p, []domain.Event{pgtest.Event(id, "c-"+id, -1, `{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
}

// refuse logs n refused deliveries of p, one a second from at, as the
// refusal flusher does: each one kept, and counted in its minute.
func refuse(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, at time.Time, n int) {
	t.Helper()
	refuseEvery(t, s, p, at, n, time.Second)
}

// refuseEvery is refuse with the refusals every apart; the flusher keeps
// at most one delivery per provider and second, so those of the same
// second after the first are counted only.
func refuseEvery(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, at time.Time, n int, every time.Duration) {
	t.Helper()
	counts := map[time.Time]int64{}
	var samples []domain.Delivery
	kept := map[int64]bool{}
	for i := range n {
		r := at.Add(time.Duration(i) * every)
		if !kept[r.Unix()] {
			kept[r.Unix()] = true
			samples = append(samples, domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
				ReceivedAt: r, Status: 401, Signature: domain.SignatureInvalid, Reason: "bad signature"})
		}
		counts[domain.RefusalMinute(r)]++
	}
	var batch []domain.RefusalCount
	for m, c := range counts {
		batch = append(batch, domain.RefusalCount{TenantID: p.TenantID, ProviderID: p.ID, Minute: m, N: c})
	}
	if err := s.LogRefusals(context.Background(), batch, samples); err != nil {
		t.Fatal(err)
	}
}

// TestProviderSilentFiresOnceResolvesOnce: a provider silent for its
// window fires once, a second evaluation writes nothing, and its next
// authenticated delivery resolves it once; a provider connected less than
// a window ago is not silent yet, and one that never spoke fires once
// the window has passed since it was connected.
func TestProviderSilentFiresOnceResolvesOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	only(t, pool, crm.TenantID, alerting.ProviderSilent, 0, 0)
	// erp is connected before t0: made after it, it was connected more
	// than a second later on a loaded cluster, and silent for 6h59m59s
	// at t0+7h.
	erp := pgtest.Provider(t, s, "acme", "erp")
	t0 := time.Now()
	deliver(t, s, crm, t0, "e1")
	refuse(t, s, crm, t0.Add(time.Second), 1) // a refusal is no sign of life

	quiet(t, s, pool, t0.Add(time.Hour))
	quiet(t, s, pool, t0.Add(6*time.Hour-time.Minute))
	ev := evaluate(t, s, t0.Add(7*time.Hour))
	if len(ev.Fired) != 2 || ev.Findings != 2 {
		t.Fatalf("fired %+v (%d findings), want crm and erp", ev.Fired, ev.Findings)
	}
	wantEvents(t, pool, "alert.fired provider_silent crm", "alert.fired provider_silent erp")
	as := alertsOf(t, pool)
	if as[0].Summary != "crm has sent no authenticated delivery for 6h." || as[0].Value < 7*3600-1 || as[0].Value > 7*3600+1 {
		t.Errorf("crm's alert: %+v", as[0])
	}
	if !strings.HasPrefix(as[1].Summary, "erp has sent no authenticated delivery since it was connected 7h0m") {
		t.Errorf("erp's alert: %+v", as[1])
	}
	if !as[0].Started.Equal(t0.Add(7 * time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("started at %s, want the evaluation's time %s", as[0].Started, t0.Add(7*time.Hour))
	}
	quiet(t, s, pool, t0.Add(7*time.Hour+30*time.Second))

	deliver(t, s, crm, t0.Add(7*time.Hour+time.Minute), "e2")
	ev = evaluate(t, s, t0.Add(7*time.Hour+2*time.Minute))
	if len(ev.Resolved) != 1 || ev.Resolved[0].Alert.Subject != "crm" || len(ev.Fired) != 0 {
		t.Fatalf("resolved %+v, fired %+v; want crm resolved", ev.Resolved, ev.Fired)
	}
	quiet(t, s, pool, t0.Add(7*time.Hour+3*time.Minute))
	wantEvents(t, pool, "alert.fired provider_silent crm", "alert.fired provider_silent erp", "alert.resolved provider_silent crm")
	as = alertsOf(t, pool)
	if as[0].Resolved == nil || *as[0].ResValue != 60 || as[1].Resolved != nil {
		t.Errorf("alerts after crm's delivery: %+v", as)
	}
	_ = erp
}

// TestRefusalsFireOnceResolveOnce: 25 refused deliveries within 5 minutes
// fire once (threshold 20); once they are out of the window it resolves
// once, with the count then (0). Tenants are apart: another tenant's
// refusals under its own threshold of 100 fire nothing.
func TestRefusalsFireOnceResolveOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	other := pgtest.Provider(t, s, "globex", "crm")
	only(t, pool, crm.TenantID, alerting.Refusals, 0, 0)
	only(t, pool, other.TenantID, alerting.Refusals, 100, 0)
	t0 := time.Now().Truncate(time.Second)
	refuse(t, s, crm, t0, 19)
	refuse(t, s, other, t0, 60)
	quiet(t, s, pool, t0.Add(time.Minute))
	refuse(t, s, crm, t0.Add(30*time.Second), 6)
	ev := evaluate(t, s, t0.Add(time.Minute))
	if len(ev.Fired) != 1 || ev.Fired[0].TenantID != crm.TenantID {
		t.Fatalf("fired %+v, want acme's crm alone", ev.Fired)
	}
	a := alertsOf(t, pool)[0]
	if a.Summary != "25 refused deliveries from crm in 5m (threshold 20)." || a.Value != 25 || a.Subject != "crm" {
		t.Errorf("alert %+v", a)
	}
	quiet(t, s, pool, t0.Add(time.Minute+30*time.Second))
	ev = evaluate(t, s, t0.Add(10*time.Minute))
	if len(ev.Resolved) != 1 {
		t.Fatalf("resolved %+v, want the crm alert", ev.Resolved)
	}
	quiet(t, s, pool, t0.Add(11*time.Minute))
	wantEvents(t, pool, "alert.fired refusals crm", "alert.resolved refusals crm")
	if a := alertsOf(t, pool)[0]; a.ResValue == nil || *a.ResValue != 0 {
		t.Errorf("resolved value %v, want 0", a.ResValue)
	}
}

// TestRefusalsCountABurst: 8 refused deliveries within one second fire a
// refusals alert of threshold 5 over 5 minutes, with the count 8. The log
// keeps one delivery of that second, and the hourly counters count only
// hours that began within the window: before refusals were counted per
// minute, the rule counted 1 here and fired nothing.
func TestRefusalsCountABurst(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	only(t, pool, crm.TenantID, alerting.Refusals, 5, 5*time.Minute)
	// Half an hour into the hour: its counter began 30 minutes before
	// the evaluation, outside the window.
	t0 := time.Now().UTC().Truncate(time.Hour).Add(30*time.Minute + 200*time.Millisecond)
	refuseEvery(t, s, crm, t0, 8, 100*time.Millisecond)
	ev := evaluate(t, s, t0.Add(10*time.Second))
	if len(ev.Fired) != 1 || ev.Fired[0].Alert.Subject != "crm" {
		t.Fatalf("fired %+v, want crm's refusals alert", ev.Fired)
	}
	if a := alertsOf(t, pool)[0]; a.Value != 8 || a.Summary != "8 refused deliveries from crm in 5m (threshold 5)." {
		t.Errorf("alert %+v, want the 8 refusals counted", a)
	}
	wantEvents(t, pool, "alert.fired refusals crm")
}

// TestRefusalsWindowMissesNoRefusal: refusals every 7 s for 20 minutes,
// counted as of many moments (on a minute, just after one, at a refusal,
// between two) over windows of a minute (the shortest), 5 minutes and an
// hour. The count is never less than the refusals within the window, and
// exceeds it only by those of the minute in which the window begins,
// before it began (that minute counts whole), and those after the moment
// within its minute (which an evaluation of the present never finds).
func TestRefusalsWindowMissesNoRefusal(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Hour).Add(13*time.Minute + 17*time.Second + 300*time.Millisecond)
	const every, n = 7 * time.Second, 20 * 60 / 7
	refuseEvery(t, s, crm, start, n, every)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * every) }
	for _, window := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
		only(t, pool, crm.TenantID, alerting.Refusals, 1, window)
		for _, now := range []time.Time{
			start.Add(-time.Second), at(0), at(1), at(9).Truncate(time.Minute), at(9).Truncate(time.Minute).Add(time.Millisecond),
			at(17).Add(-time.Millisecond), at(60), at(60).Add(3 * time.Second), at(n - 1), at(n - 1).Truncate(time.Minute).Add(time.Minute),
			at(n - 1).Add(window).Add(-time.Second), at(n - 1).Add(window), at(n - 1).Add(window + time.Minute),
		} {
			within, boundary := 0, 0
			for i := range n {
				r := at(i)
				switch {
				case r.After(now.Add(-window)) && !r.After(now):
					within++
				case !r.Before(now.Add(-window).Truncate(time.Minute)) && !r.After(now.Add(-window)),
					r.After(now) && r.Truncate(time.Minute).Equal(now.Truncate(time.Minute)):
					boundary++
				}
			}
			counts, err := alertcheck.RefusalsCounted(ctx, pool, crm.TenantID, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := counts["crm"]; got < int64(within) || got > int64(within+boundary) {
				t.Errorf("window %s as of %s: %d refusals counted, want %d within the window (up to %d more of its first and last minutes)",
					window, now.Format("15:04:05.000"), got, within, boundary)
			}
		}
	}
}

// conflict makes one revision conflict of p's contact c.
func conflict(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, c string) int64 {
	t.Helper()
	pgtest.WantOutcome(t, pgtest.Ingest(t, s, p, pgtest.Event(c+"-a", c, 5, `{"a":1}`)), domain.Applied)
	r := pgtest.Ingest(t, s, p, pgtest.Event(c+"-b", c, 5, `{"a":2}`))
	pgtest.WantOutcome(t, r, domain.RevisionConflict)
	return r.ConflictID
}

// TestConflictsOpenFiresOnceResolvesOnce: an open conflict fires (default
// threshold 1), a second open one changes nothing, and the alert resolves
// once every conflict is resolved; disabling the rule resolves a firing
// alert too, with the value it fired with.
func TestConflictsOpenFiresOnceResolvesOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	only(t, pool, crm.TenantID, alerting.ConflictsOpen, 0, 0)
	t0 := time.Now()
	quiet(t, s, pool, t0)
	c1 := conflict(t, s, crm, "c1")
	ev := evaluate(t, s, t0.Add(time.Minute))
	if len(ev.Fired) != 1 {
		t.Fatalf("fired %+v", ev.Fired)
	}
	if a := alertsOf(t, pool)[0]; a.Summary != "1 revision conflict is open (threshold 1), 1 detected in the last 1h." || a.Value != 1 {
		t.Errorf("alert %+v", a)
	}
	c2 := conflict(t, s, crm, "c2")
	quiet(t, s, pool, t0.Add(2*time.Minute))
	ctx := pgtest.AsOperator(context.Background())
	for _, id := range []int64{c1, c2} {
		if _, err := s.ResolveConflict(ctx, crm.TenantID, id, domain.ResolveKeep, "", "ops"); err != nil {
			t.Fatal(err)
		}
	}
	ev = evaluate(t, s, t0.Add(3*time.Minute))
	if len(ev.Resolved) != 1 {
		t.Fatalf("resolved %+v", ev.Resolved)
	}
	quiet(t, s, pool, t0.Add(4*time.Minute))

	// Disabled while firing: resolved at the next evaluation.
	conflict(t, s, crm, "c3")
	evaluate(t, s, t0.Add(5*time.Minute))
	setRule(t, pool, crm.TenantID, alerting.ConflictsOpen, false, 1, time.Hour)
	ev = evaluate(t, s, t0.Add(6*time.Minute))
	if len(ev.Resolved) != 1 || ev.Resolved[0].Alert.Rule != alerting.ConflictsOpen {
		t.Fatalf("disabling the rule resolved %+v", ev.Resolved)
	}
	quiet(t, s, pool, t0.Add(7*time.Minute))
	wantEvents(t, pool, "alert.fired conflicts_open ", "alert.resolved conflicts_open ",
		"alert.fired conflicts_open ", "alert.resolved conflicts_open ")
	if as := alertsOf(t, pool); *as[1].ResValue != 1 || !as[1].Resolved.Equal(t0.Add(6*time.Minute).Truncate(time.Microsecond)) {
		t.Errorf("the disabled rule's alert: %+v", as[1])
	}
}

// TestDestinationFailingFiresOnceResolvesOnce: an active destination
// whose attempts have had no 2xx for its window fires, resolves once it
// answers 2xx, and fires again once the sender pauses it as failing; a
// destination an owner paused never fires. The summary names the
// destination without its URL's query and leaves the receiver's answer
// out (review 4, M2): every member and token reads it.
func TestDestinationFailingFiresOnceResolvesOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	only(t, pool, crm.TenantID, alerting.DestinationFailing, 0, 0)
	ctx := context.Background()
	t0 := time.Now()
	var id, paused int64
	for i, status := range []string{"active", "paused"} {
		err := pool.QueryRow(ctx, `INSERT INTO destinations (tenant_id, kind, url, types, status, created_at)
			VALUES ($1, 'webhook', $2, '{record.*}', $3, $4) RETURNING id`, crm.TenantID, fmt.Sprintf("https://hooks.example.com/%d?token=S3cr3t", i),
			status, t0.Add(-time.Hour)).Scan(map[int]*int64{0: &id, 1: &paused}[i])
		if err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(dest int64, at time.Time, status int) {
		t.Helper()
		if _, err := pool.Exec(ctx, `INSERT INTO destination_attempts (tenant_id, destination_id, position, attempted_at, status, duration_ms)
			VALUES ($1, $2, 1, $3, $4, 10)`, crm.TenantID, dest, at, status); err != nil {
			t.Fatal(err)
		}
	}
	quiet(t, s, pool, t0) // no attempt yet
	for i := range 4 {
		attempt(id, t0.Add(time.Duration(i)*time.Minute), 503)
		attempt(paused, t0.Add(time.Duration(i)*time.Minute), 503)
	}
	ev := evaluate(t, s, t0.Add(5*time.Minute))
	if len(ev.Fired) != 1 || ev.Fired[0].Alert.Subject != fmt.Sprint(id) {
		t.Fatalf("fired %+v, want destination %d", ev.Fired, id)
	}
	want := fmt.Sprintf("Destination %d (https://hooks.example.com/0?<redacted>) has answered no attempt with a 2xx for 15m (4 failed attempts).", id)
	if a := alertsOf(t, pool)[0]; a.Summary != want || a.Value != 4 {
		t.Errorf("alert %+v, want %q", a, want)
	}
	quiet(t, s, pool, t0.Add(6*time.Minute))
	attempt(id, t0.Add(7*time.Minute), 200)
	if _, err := pool.Exec(ctx, `UPDATE destinations SET last_success_at = $3 WHERE tenant_id = $1 AND id = $2`,
		crm.TenantID, id, t0.Add(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ev := evaluate(t, s, t0.Add(8*time.Minute)); len(ev.Resolved) != 1 {
		t.Fatalf("resolved %+v", ev.Resolved)
	}
	quiet(t, s, pool, t0.Add(9*time.Minute))
	if _, err := pool.Exec(ctx, `UPDATE destinations SET status = 'failing', status_reason = 'change 7 has not been delivered since 2026-01-01T00:00:00Z: answered 503 Service Unavailable: token S3cr3t expired'
		WHERE tenant_id = $1 AND id = $2`, crm.TenantID, id); err != nil {
		t.Fatal(err)
	}
	if ev := evaluate(t, s, t0.Add(10*time.Minute)); len(ev.Fired) != 1 ||
		ev.Fired[0].Alert.Summary != fmt.Sprintf("Destination %d (https://hooks.example.com/0?<redacted>) was paused as failing: change 7 has not been delivered since 2026-01-01T00:00:00Z.", id) {
		t.Fatalf("fired %+v", ev.Fired)
	}
	quiet(t, s, pool, t0.Add(11*time.Minute))
	wantEvents(t, pool, "alert.fired destination_failing "+fmt.Sprint(id), "alert.resolved destination_failing "+fmt.Sprint(id),
		"alert.fired destination_failing "+fmt.Sprint(id))
}

// TestReconciliationFiresOnceResolvesOnce: the last reconciliation's
// violations in a tenant fire in that tenant only, and a clean report
// resolves the alert.
func TestReconciliationFiresOnceResolvesOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	other := pgtest.Provider(t, s, "globex", "crm")
	only(t, pool, crm.TenantID, alerting.Reconciliation, 0, 0)
	only(t, pool, other.TenantID, alerting.Reconciliation, 0, 0)
	ctx := context.Background()
	t0 := time.Now()
	quiet(t, s, pool, t0) // no report yet
	inv := reconciliation.Invariants[0]
	report := reconciliation.Report{StartedAt: t0, FinishedAt: t0, Counts: map[reconciliation.Invariant]int64{inv: 2},
		Violations: []reconciliation.Violation{{Invariant: inv, Tenant: "acme", Detail: "one"}, {Invariant: inv, Tenant: "acme", Detail: "two"}}}
	if err := s.SaveReconciliation(ctx, report); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, s, t0.Add(time.Minute))
	if len(ev.Fired) != 1 || ev.Fired[0].TenantID != crm.TenantID ||
		ev.Fired[0].Alert.Summary != "The last reconciliation found 2 violations in this tenant (see tidemark audit)." {
		t.Fatalf("fired %+v", ev.Fired)
	}
	quiet(t, s, pool, t0.Add(2*time.Minute))
	clean := reconciliation.Report{StartedAt: t0.Add(3 * time.Minute), FinishedAt: t0.Add(3 * time.Minute), Counts: map[reconciliation.Invariant]int64{}}
	if err := s.SaveReconciliation(ctx, clean); err != nil {
		t.Fatal(err)
	}
	if ev := evaluate(t, s, t0.Add(4*time.Minute)); len(ev.Resolved) != 1 {
		t.Fatalf("resolved %+v", ev.Resolved)
	}
	quiet(t, s, pool, t0.Add(5*time.Minute))
	wantEvents(t, pool, "alert.fired reconciliation ", "alert.resolved reconciliation ")
}
