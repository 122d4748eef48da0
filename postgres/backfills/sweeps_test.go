package backfills_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

const (
	every   = 15 * time.Minute
	overlap = 5 * time.Minute
)

// due returns the sweeps due at now, by provider id.
func due(t *testing.T, s *postgres.Store, now time.Time) map[int64]pull.SweepDue {
	t.Helper()
	list, err := s.SweepsDue(context.Background(), now, every, overlap)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]pull.SweepDue{}
	for _, d := range list {
		out[d.ProviderID] = d
	}
	return out
}

// sweep runs one sweep of p due at now to its end in state.
func sweep(t *testing.T, s *postgres.Store, d pull.SweepDue, now time.Time, state pull.JobState, missed int) pull.Job {
	t.Helper()
	ctx := context.Background()
	j, err := s.StartBackfill(ctx, d.TenantID, d.ProviderID, d.From, now, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.ClaimBackfill(ctx); !ok || err != nil || c.ID != j.ID {
		t.Fatalf("claim: %+v %v %v", c, ok, err)
	}
	if err := s.FinishBackfill(ctx, d.TenantID, j.ID, pull.Progress{Events: missed, Missed: missed}, state, ""); err != nil {
		t.Fatal(err)
	}
	return j
}

// withScope gives each provider the scope contact.snapshot, as its first
// contact delivery would.
func withScope(t *testing.T, s *postgres.Store, ps ...domain.ProviderEndpoint) {
	t.Helper()
	for _, p := range ps {
		sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
		if err := s.SaveProviderScope(pgtest.AsCLI(context.Background()), p.TenantID, p.ID, sc); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSweepsDue: a provider with API credentials is swept first over the
// last interval, then from where the last finished sweep ended less the
// overlap, once an interval has passed since the newest sweep started
// and none is queued or running; a failed sweep is retried over the same
// window, and no sweep reaches back further than pull.MaxSince.
func TestSweepsDue(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	without := pgtest.Provider(t, s, "acme", "billing")
	other := pgtest.Provider(t, s, "globex", "crm")
	unscoped := pgtest.Provider(t, s, "acme", "hs")
	ctx := context.Background()
	withScope(t, s, p, without, other)
	withCredentials(t, s, p)
	withCredentials(t, s, other)
	withCredentials(t, s, unscoped)

	now := time.Now()
	first := due(t, s, now)
	if len(first) != 2 || first[p.ID].From.Sub(now.Add(-every)).Abs() > time.Millisecond || first[other.ID].TenantID != other.TenantID {
		t.Fatalf("first sweeps due: %+v", first)
	}
	if _, ok := first[without.ID]; ok {
		t.Fatal("a provider without API credentials is due")
	}
	if _, ok := first[unscoped.ID]; ok {
		t.Fatal("a provider without scopes is due: its sweep could only fail, every interval")
	}

	// Queued: not due, and a second sweep is refused.
	j, err := s.StartBackfill(ctx, p.TenantID, p.ID, first[p.ID].From, now, "", true)
	if err != nil || j.CreatedBy != "sweep" {
		t.Fatalf("start sweep: %+v %v", j, err)
	}
	if _, ok := due(t, s, now.Add(time.Hour))[p.ID]; ok {
		t.Fatal("due while its sweep is queued")
	}
	if _, err := s.StartBackfill(ctx, p.TenantID, p.ID, first[p.ID].From, now, "", true); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("second sweep: %v, want ECONFLICT", err)
	}
	if c, ok, _ := s.ClaimBackfill(ctx); !ok || c.ID != j.ID {
		t.Fatalf("claim %+v", c)
	}
	if err := s.FinishBackfill(ctx, p.TenantID, j.ID, pull.Progress{}, pull.Done, ""); err != nil {
		t.Fatal(err)
	}
	if len(auditActions(t, s, p.TenantID)) != 0 {
		t.Fatal("a sweep was recorded in the audit log")
	}

	// Within the interval: not due; after it: due from the end less the
	// overlap.
	if _, ok := due(t, s, now.Add(every/2))[p.ID]; ok {
		t.Fatal("due within the interval")
	}
	later := now.Add(every + time.Minute)
	next := due(t, s, later)[p.ID]
	if next.From.Sub(now.Add(-overlap)).Abs() > time.Millisecond {
		t.Fatalf("next sweep from %v, want %v", next.From, now.Add(-overlap))
	}

	// A failed sweep moves nothing: the next covers its window again.
	sweep(t, s, next, later, pull.Failed, 0)
	retry := due(t, s, later.Add(every+time.Minute))[p.ID]
	if !retry.From.Equal(next.From) {
		t.Fatalf("after a failed sweep, from %v, want %v again", retry.From, next.From)
	}

	// A provider unswept for longer than MaxSince is swept over MaxSince.
	far := now.Add(pull.MaxSince + 24*time.Hour)
	if d := due(t, s, far)[p.ID]; d.From.Sub(far.Add(-pull.MaxSince)).Abs() > time.Millisecond {
		t.Fatalf("from %v, want %v", d.From, far.Add(-pull.MaxSince))
	}
}

// TestLastSweeps: per provider with API credentials, the newest ended
// sweep, or none yet; operators' jobs and running sweeps do not count.
func TestLastSweeps(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	quiet := pgtest.Provider(t, s, "acme", "billing")
	pgtest.Provider(t, s, "acme", "support") // no credentials
	withScope(t, s, p, quiet)
	withCredentials(t, s, p)
	withCredentials(t, s, quiet)
	ctx := context.Background()

	now := time.Now()
	d := due(t, s, now)[p.ID]
	sweep(t, s, d, now, pull.Done, 1)
	done := sweep(t, s, pull.SweepDue{TenantID: p.TenantID, ProviderID: p.ID, From: now.Add(-overlap)}, now.Add(time.Second), pull.Done, 3)
	start(t, s, p, time.Hour, "") // an operator's
	if _, err := s.StartBackfill(ctx, p.TenantID, p.ID, now, now.Add(time.Minute), "", true); err != nil {
		t.Fatal(err) // queued, not ended
	}

	last, err := s.LastSweeps(ctx, p.TenantID)
	if err != nil || len(last) != 2 {
		t.Fatalf("last sweeps: %+v %v", last, err)
	}
	if got := last[p.ID]; got.ID != done.ID || got.Missed != 3 || got.State != pull.Done || got.FinishedAt.IsZero() {
		t.Fatalf("crm's last sweep: %+v, want job %d", got, done.ID)
	}
	if got := last[quiet.ID]; got.ID != 0 || got.Provider != "billing" || got.ProviderID != quiet.ID {
		t.Fatalf("billing, never swept: %+v", got)
	}
}
