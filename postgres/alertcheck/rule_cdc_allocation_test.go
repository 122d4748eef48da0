package alertcheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestCDCAllocationFiresOnceResolvesOnce: a stream whose org has used 80%
// of its delivery allocation fires once per provider; a reading under the
// threshold resolves it; a reading older than the window does not fire,
// nor a stream turned off.
func TestCDCAllocationFiresOnceResolvesOnce(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	only(t, pool, crm.TenantID, alerting.CDCAllocation, 0, 0)
	ctx := context.Background()
	// A stream as provider update --cdc leaves it (the kind's checks are
	// postgres/cdc's).
	if _, err := pool.Exec(ctx, `INSERT INTO cdc_streams (tenant_id, provider_id, enabled) VALUES ($1, $2, true)`, crm.TenantID, crm.ID); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	quiet(t, s, pool, t0) // never read
	read := func(used, max int64, at time.Time) {
		t.Helper()
		if err := s.RecordCDCAllocation(ctx, crm.TenantID, crm.ID, domain.CDCAllocation{Max: max, Remaining: max - used, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	read(40_000, 50_000, t0.Add(-2*time.Hour))
	quiet(t, s, pool, t0) // read before the window
	read(40_000, 50_000, t0.Add(time.Minute))
	ev := evaluate(t, s, t0.Add(2*time.Minute))
	if len(ev.Fired) != 1 {
		t.Fatalf("fired %+v, want crm's", ev.Fired)
	}
	if a := alertsOf(t, pool)[0]; a.Value != 80 || a.Summary != "crm: the org has used 80% of its daily event delivery allocation (40000 of 50000; threshold 80%); "+
		"at 100% Salesforce stops delivering change events until the rolling 24 hours free some." {
		t.Errorf("alert %+v", a)
	}
	quiet(t, s, pool, t0.Add(3*time.Minute))
	read(10_000, 50_000, t0.Add(4*time.Minute))
	if ev := evaluate(t, s, t0.Add(5*time.Minute)); len(ev.Resolved) != 1 {
		t.Fatalf("resolved %+v, want crm's", ev.Resolved)
	}
	read(49_000, 50_000, t0.Add(6*time.Minute))
	if _, err := pool.Exec(ctx, `UPDATE cdc_streams SET enabled = false WHERE tenant_id = $1`, crm.TenantID); err != nil {
		t.Fatal(err)
	}
	quiet(t, s, pool, t0.Add(7*time.Minute))
	wantEvents(t, pool, "alert.fired cdc_allocation crm", "alert.resolved cdc_allocation crm")
}
