package queue_test

import (
	"context"
	"testing"
	"time"
)

// TestAlertFacts: the stream tells, per tenant, when the oldest waiting
// delivery was stored, and how many dead letters it has and when the
// newest was set aside; a drained tenant is not named.
func TestAlertFacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	before := time.Now()
	poison := b.delivery("e-0", "c-1", 1)
	poison.ProviderName = "gone" // a worker sets it aside
	b.enqueue(poison)
	b.enqueue(b.delivery("e-1", "c-1", 2))
	facts, err := b.q.AlertFacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].TenantID != b.ep.TenantID || facts[0].Oldest.Before(before.Add(-time.Second)) ||
		facts[0].Oldest.After(time.Now()) || facts[0].DeadLetters != 0 {
		t.Fatalf("facts with two waiting: %+v", facts)
	}

	b.work(1)
	b.await(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = 'applied'`, 1)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		facts, err = b.q.AlertFacts(ctx)
		if err == nil && len(facts) == 1 && facts[0].Oldest.IsZero() && facts[0].DeadLetters == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("facts after the worker: %+v, %v; want one dead letter and nothing waiting", facts, err)
		}
	}
	if last := facts[0].LastDead; last.Before(before.Add(-time.Second)) || last.After(time.Now()) {
		t.Errorf("the dead letter's time %s is not between the test's start and now", last)
	}
}
