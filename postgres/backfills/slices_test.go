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

// claim claims the next job; the zero job when none is claimable.
func claim(t *testing.T, s *postgres.Store) pull.Job {
	t.Helper()
	j, ok, err := s.ClaimBackfill(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return pull.Job{}
	}
	return j
}

// TestClaimTakesTurnsByTenant (review 4 M4): a tenant that queued many
// jobs first does not get them all run first. Claims take turns by
// tenant: the tenant whose latest slice started longest ago goes next,
// a tenant runs one job at a time, and within a tenant its sweep goes
// ahead of the jobs its operators queued before it.
func TestClaimTakesTurnsByTenant(t *testing.T) {
	t.Parallel()
	s, a1 := pgtest.Setup(t, postgres.New)
	a2, a3 := pgtest.Provider(t, s, "acme", "erp"), pgtest.Provider(t, s, "acme", "billing")
	b1, b2 := pgtest.Provider(t, s, "globex", "crm"), pgtest.Provider(t, s, "globex", "erp")
	ctx := context.Background()
	// acme queues three jobs, then globex one and a sweep.
	acme := []pull.Job{start(t, s, a1, time.Hour, ""), start(t, s, a2, time.Hour, ""), start(t, s, a3, time.Hour, "")}
	globexJob := start(t, s, b1, time.Hour, "")
	now := time.Now()
	globexSweep, err := s.StartBackfill(ctx, b2.TenantID, b2.ID, now.Add(-time.Hour), now, "", true)
	if err != nil {
		t.Fatal(err)
	}

	want := func(step string, got, want pull.Job) {
		t.Helper()
		if got.ID != want.ID || got.TenantID != want.TenantID {
			t.Fatalf("%s: claimed job %d of %q, want job %d of tenant %d", step, got.ID, got.TenantSlug, want.ID, want.TenantID)
		}
	}
	yield := func(j pull.Job) {
		t.Helper()
		if err := s.YieldBackfill(ctx, j.TenantID, j.ID, pull.Progress{Pages: 1}, pull.Position{}); err != nil {
			t.Fatal(err)
		}
	}
	first := claim(t, s)
	want("first claim", first, acme[0])
	second := claim(t, s)
	want("second claim, acme running", second, globexSweep)
	want("third claim, both running", claim(t, s), pull.Job{})

	// acme's slice ends first, then globex's sweep ends: acme's turn is
	// older, so acme goes on; then globex, while acme runs.
	yield(first)
	if err := s.FinishBackfill(ctx, second.TenantID, second.ID, pull.Progress{}, pull.Done, ""); err != nil {
		t.Fatal(err)
	}
	third := claim(t, s)
	want("acme's turn", third, acme[0])
	fourth := claim(t, s)
	want("globex's turn", fourth, globexJob)
	yield(third)
	yield(fourth)
	want("acme's turn again", claim(t, s), acme[0])
}

// TestYieldKeepsPosition: a job given back after a slice is queued with
// its progress, its totals and the position its next slice starts at, and
// is claimed with them; one asked to stop meanwhile is cancelled instead.
func TestYieldKeepsPosition(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	job := start(t, s, p, time.Hour, "")
	claim(t, s)
	at := pull.Position{ObjectType: "contact", From: job.From.Add(10 * time.Minute).Truncate(time.Millisecond), Span: 5 * time.Minute}
	progress := pull.Progress{Deliveries: 3, Events: 250, Missed: 7, Pages: 100, RanFor: 61 * time.Second,
		Outcomes: map[string]int{"applied": 7, "duplicate": 243}}
	if err := s.YieldBackfill(ctx, p.TenantID, job.ID, progress, at); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Backfill(ctx, p.TenantID, job.ID)
	if j.State != pull.Queued || j.Events != 250 || j.Pages != 100 || j.RanFor != 61*time.Second || !j.At.From.Equal(at.From) ||
		j.At.ObjectType != "contact" || j.At.Span != at.Span || j.StartedAt.IsZero() || !j.FinishedAt.IsZero() {
		t.Fatalf("yielded: %+v, want queued with its progress and position %+v", j, at)
	}
	if err := s.YieldBackfill(ctx, p.TenantID, job.ID, progress, at); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("yield of a queued job: %v, want ECONFLICT", err)
	}
	again := claim(t, s)
	if again.ID != job.ID || again.State != pull.Running || again.Outcomes["duplicate"] != 243 || !again.At.From.Equal(at.From) ||
		!again.StartedAt.Equal(j.StartedAt) {
		t.Fatalf("claimed again: %+v", again)
	}
	if _, err := s.CancelBackfill(asOperator, p.TenantID, job.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.YieldBackfill(ctx, p.TenantID, job.ID, progress, pull.Position{}); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Backfill(ctx, p.TenantID, job.ID); j.State != pull.Cancelled || j.FinishedAt.IsZero() || j.Events != 250 {
		t.Fatalf("yielded after a cancel: %+v, want cancelled with its progress", j)
	}
}
