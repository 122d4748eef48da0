package alertcheck_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestQueueRulesFireOnceResolveOnce: a delivery queued longer than the
// window fires queue_backlog once, and it resolves once the queue drains;
// a dead letter within the window fires dead_letters, which resolves once
// the window has passed; while the stream cannot be read, neither fires
// nor resolves; another tenant's facts never fire this tenant's rules.
func TestQueueRulesFireOnceResolveOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	other := pgtest.Provider(t, s, "globex", "crm")
	for _, tenant := range []int64{crm.TenantID, other.TenantID} {
		only(t, pool, tenant, alerting.QueueBacklog, 0, 0)
		setRule(t, pool, tenant, alerting.DeadLetters, true, 1, time.Hour)
	}
	t0 := time.Now()
	facts := func(fs ...alerting.QueueFact) alerting.QueueFacts {
		return alerting.QueueFacts{Known: true, Tenants: fs}
	}
	queued := alerting.QueueFact{TenantID: crm.TenantID, Oldest: t0}

	// Queued for less than the window (15 min): nothing.
	if ev := evaluateWith(t, s, t0.Add(10*time.Minute), facts(queued)); len(ev.Fired) != 0 {
		t.Fatalf("fired %+v before the window", ev.Fired)
	}
	ev := evaluateWith(t, s, t0.Add(16*time.Minute), facts(queued))
	if len(ev.Fired) != 1 || ev.Fired[0].TenantID != crm.TenantID || ev.Fired[0].Alert.Rule != alerting.QueueBacklog ||
		ev.Fired[0].Alert.Value != 16*60 {
		t.Fatalf("fired %+v", ev.Fired)
	}
	if ev := evaluateWith(t, s, t0.Add(17*time.Minute), facts(queued)); len(ev.Fired)+len(ev.Resolved) != 0 {
		t.Fatalf("a second evaluation changed %+v %+v", ev.Fired, ev.Resolved)
	}
	// The stream cannot be read: the alert stays.
	if ev := evaluateWith(t, s, t0.Add(18*time.Minute), alerting.QueueFacts{}); len(ev.Resolved) != 0 {
		t.Fatalf("an unknown queue resolved %+v", ev.Resolved)
	}
	// Drained: resolved once.
	if ev := evaluateWith(t, s, t0.Add(19*time.Minute), facts()); len(ev.Resolved) != 1 || ev.Resolved[0].Alert.Rule != alerting.QueueBacklog {
		t.Fatalf("resolved %+v", ev.Resolved)
	}

	// A dead letter 5 minutes before: fires; an hour later it resolves.
	dead := alerting.QueueFact{TenantID: crm.TenantID, DeadLetters: 2, LastDead: t0.Add(15 * time.Minute)}
	ev = evaluateWith(t, s, t0.Add(20*time.Minute), facts(dead))
	if len(ev.Fired) != 1 || ev.Fired[0].Alert.Rule != alerting.DeadLetters || ev.Fired[0].Alert.Value != 2 {
		t.Fatalf("dead letter fired %+v", ev.Fired)
	}
	if ev := evaluateWith(t, s, t0.Add(76*time.Minute), facts(dead)); len(ev.Resolved) != 1 {
		t.Fatalf("an old dead letter resolved %+v", ev.Resolved)
	}
	wantEvents(t, pool, "alert.fired queue_backlog ", "alert.resolved queue_backlog ",
		"alert.fired dead_letters ", "alert.resolved dead_letters ")
	for _, a := range alertsOf(t, pool) {
		if a.Tenant != crm.TenantID {
			t.Errorf("another tenant's alert %+v", a)
		}
	}
}
