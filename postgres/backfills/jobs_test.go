package backfills_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// withCredentials gives p API credentials.
func withCredentials(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint) {
	t.Helper()
	if err := s.SetAPICredentials(asOperator, p.TenantID, p.ID, pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
}

var asOperator = pgtest.AsOperator(context.Background())

// start queues an operator's job of p over the last since.
func start(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, since time.Duration, objectType string) pull.Job {
	t.Helper()
	now := time.Now()
	j, err := s.StartBackfill(asOperator, p.TenantID, p.ID, now.Add(-since), now, objectType, false)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// auditActions lists the audit log's backfill entries of the tenant as
// "action target by actor".
func auditActions(t *testing.T, s *postgres.Store, tenantID int64) []string {
	t.Helper()
	rows, _ := s.Pool().Query(context.Background(), `SELECT action || ' ' || target || ' by ' || actor FROM audit_log
		WHERE tenant_id = $1 AND action LIKE 'backfill%' ORDER BY id`, tenantID)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStartAndRead(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	a := start(t, s, p, 72*time.Hour, "contact")
	if a.State != pull.Queued || a.Provider != "crm" || a.TenantSlug != "acme" || a.ObjectType != "contact" ||
		a.CreatedBy != pgtest.Operator.Name || a.Sweep || !a.StartedAt.IsZero() || a.To.Sub(a.From) != 72*time.Hour {
		t.Fatalf("started %+v", a)
	}
	// A provider has one operator's job queued or running at a time.
	_, err := s.StartBackfill(asOperator, p.TenantID, p.ID, time.Now().Add(-time.Hour), time.Now(), "", false)
	if domain.ErrorCode(err) != domain.ECONFLICT || domain.ErrorMessage(err) != "backfill job "+itoa(a.ID)+
		" of provider crm is already queued: a provider has one backfill queued or running at a time; wait for it to end, or cancel it first" {
		t.Fatalf("a second job of the provider: %v, want a conflict naming job %d", err, a.ID)
	}
	if _, err := s.CancelBackfill(asOperator, p.TenantID, a.ID); err != nil {
		t.Fatal(err)
	}
	b := start(t, s, p, time.Hour, "")
	got, err := s.Backfill(context.Background(), p.TenantID, a.ID)
	if err != nil || got.ID != a.ID || got.ObjectType != "contact" {
		t.Fatalf("backfill %d: %+v %v", a.ID, got, err)
	}
	list, err := s.Backfills(context.Background(), p.TenantID, p.ID, 10)
	if err != nil || len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Fatalf("list, newest first: %+v %v", list, err)
	}
	if list, _ := s.Backfills(context.Background(), p.TenantID, p.ID, 1); len(list) != 1 || list[0].ID != b.ID {
		t.Fatalf("limit 1: %+v", list)
	}
	if want := []string{"backfill_start backfill job " + itoa(a.ID) + " by ann@example.com",
		"backfill_cancel backfill job " + itoa(a.ID) + " by ann@example.com",
		"backfill_start backfill job " + itoa(b.ID) + " by ann@example.com"}; !slices.Equal(auditActions(t, s, p.TenantID), want) {
		t.Fatalf("audit %v, want %v", auditActions(t, s, p.TenantID), want)
	}

	now := time.Now()
	for name, c := range map[string]struct {
		from, to time.Time
		sweep    bool
		ctx      context.Context
		want     string
	}{
		"empty window":     {now, now, false, asOperator, domain.EINVALID},
		"over 90 days":     {now.Add(-pull.MaxSince - time.Hour), now, false, asOperator, domain.EINVALID},
		"no actor":         {now.Add(-time.Hour), now, false, context.Background(), domain.EINTERNAL},
		"unknown provider": {now.Add(-time.Hour), now, true, context.Background(), domain.ENOTFOUND},
	} {
		providerID := p.ID
		if c.want == domain.ENOTFOUND {
			providerID = p.ID + 1000
		}
		if _, err := s.StartBackfill(c.ctx, p.TenantID, providerID, c.from, c.to, "", c.sweep); domain.ErrorCode(err) != c.want {
			t.Errorf("%s: %v, want %s", name, err, c.want)
		}
	}
}

// TestClaimRace: nodes claiming at once each get a job of their own, every
// tenant's sweep (ahead of its operator's job) is claimed exactly once, and
// no tenant gets a second job running.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	s := pgtest.New(t, postgres.New)
	queued := map[int64]bool{}
	for i := range 8 {
		p := pgtest.Provider(t, s, "tenant"+strconv.Itoa(i), "crm")
		start(t, s, p, time.Hour, "")
		now := time.Now()
		sweep, err := s.StartBackfill(context.Background(), p.TenantID, p.ID, now.Add(-time.Hour), now, "", true)
		if err != nil {
			t.Fatal(err)
		}
		queued[sweep.ID] = true
	}
	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		wg      sync.WaitGroup
		ready   = make(chan struct{})
	)
	for range 6 {
		wg.Go(func() {
			<-ready
			for {
				j, ok, err := s.ClaimBackfill(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				if j.State != pull.Running || j.StartedAt.IsZero() {
					t.Errorf("claimed %+v", j)
				}
				mu.Lock()
				claimed[j.ID]++
				mu.Unlock()
			}
		})
	}
	close(ready)
	wg.Wait()
	for id := range queued {
		if claimed[id] != 1 {
			t.Errorf("job %d claimed %d times", id, claimed[id])
		}
	}
	if len(claimed) != len(queued) {
		t.Errorf("claimed %d jobs, want %d: one per tenant", len(claimed), len(queued))
	}
}

// TestClaimSkipsLockedJob: a claim does not wait for a job another claim
// holds; it takes the next one.
func TestClaimSkipsLockedJob(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	first, second := start(t, s, p, time.Hour, ""), start(t, s, pgtest.Provider(t, s, "globex", "crm"), time.Hour, "")
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT FROM backfill_jobs WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, p.TenantID, first.ID); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	j, ok, err := s.ClaimBackfill(wait)
	if err != nil || !ok || j.ID != second.ID {
		t.Fatalf("claim while job %d is locked: %+v %v %v, want job %d", first.ID, j, ok, err, second.ID)
	}
}

// TestStaleJobQueuedAgain: a running job whose node stopped reporting for
// pull.StaleAfter is claimed again (by another node); one an operator had
// asked to stop is cancelled instead; one that reports is left alone.
func TestStaleJobQueuedAgain(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	// Three tenants: each has one job running at a time.
	q, r := pgtest.Provider(t, s, "globex", "crm"), pgtest.Provider(t, s, "initech", "crm")
	stale, stopping, live := start(t, s, p, time.Hour, ""), start(t, s, q, time.Hour, ""), start(t, s, r, time.Hour, "")
	for range 3 {
		if _, ok, err := s.ClaimBackfill(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if _, err := s.CancelBackfill(asOperator, q.TenantID, stopping.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE backfill_jobs SET heartbeat_at = now() - $5::interval
		WHERE (tenant_id, id) IN (($1::bigint, $2::bigint), ($3::bigint, $4::bigint))`,
		p.TenantID, stale.ID, q.TenantID, stopping.ID, (pull.StaleAfter + time.Second).String()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportBackfill(ctx, r.TenantID, live.ID, pull.Progress{Events: 3}); err != nil {
		t.Fatal(err)
	}
	j, ok, err := s.ClaimBackfill(ctx)
	if err != nil || !ok || j.ID != stale.ID || j.State != pull.Running {
		t.Fatalf("claim: %+v %v %v, want the stale job %d again", j, ok, err, stale.ID)
	}
	if _, ok, _ := s.ClaimBackfill(ctx); ok {
		t.Fatal("claimed a job that is running and reporting")
	}
	if got, _ := s.Backfill(ctx, q.TenantID, stopping.ID); got.State != pull.Cancelled || got.FinishedAt.IsZero() {
		t.Fatalf("stale job asked to stop: %+v, want cancelled", got)
	}
	if got, _ := s.Backfill(ctx, r.TenantID, live.ID); got.State != pull.Running || got.Events != 3 {
		t.Fatalf("live job: %+v", got)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	running := start(t, s, p, time.Hour, "")
	other := pgtest.Provider(t, s, "globex", "crm")
	queued := start(t, s, other, time.Hour, "")
	if j, ok, _ := s.ClaimBackfill(ctx); !ok || j.ID != running.ID {
		t.Fatalf("claim: %+v", j)
	}

	// A queued job ends at once; no node will claim it.
	j, err := s.CancelBackfill(asOperator, other.TenantID, queued.ID)
	if err != nil || j.State != pull.Cancelled || j.FinishedAt.IsZero() {
		t.Fatalf("cancel queued: %+v %v", j, err)
	}
	if j, ok, _ := s.ClaimBackfill(ctx); ok {
		t.Fatalf("claimed a cancelled job: %+v", j)
	}

	// A running one is asked to stop; its node learns it at its next report
	// and ends it.
	if cancel, err := s.ReportBackfill(ctx, p.TenantID, running.ID, pull.Progress{Events: 1}); cancel || err != nil {
		t.Fatalf("report before the cancel: %v %v", cancel, err)
	}
	j, err = s.CancelBackfill(asOperator, p.TenantID, running.ID)
	if err != nil || j.State != pull.Running || !j.CancelRequested || !j.FinishedAt.IsZero() {
		t.Fatalf("cancel running: %+v %v", j, err)
	}
	progress := pull.Progress{Deliveries: 1, Events: 4, Missed: 2, Outcomes: map[string]int{"applied": 2, "duplicate": 2}}
	if cancel, err := s.ReportBackfill(ctx, p.TenantID, running.ID, progress); !cancel || err != nil {
		t.Fatalf("report after the cancel: %v %v, want cancel", cancel, err)
	}
	if err := s.FinishBackfill(ctx, p.TenantID, running.ID, progress, pull.Cancelled, ""); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Backfill(ctx, p.TenantID, running.ID)
	if j.State != pull.Cancelled || j.Events != 4 || j.Missed != 2 || j.Outcomes["duplicate"] != 2 {
		t.Fatalf("finished: %+v", j)
	}

	// Ended jobs cannot be cancelled or finished again.
	if _, err := s.CancelBackfill(asOperator, p.TenantID, running.ID); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("cancel ended: %v, want ECONFLICT", err)
	}
	if err := s.FinishBackfill(ctx, p.TenantID, running.ID, progress, pull.Done, ""); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("finish ended: %v, want ECONFLICT", err)
	}
	if err := s.FinishBackfill(ctx, p.TenantID, running.ID, progress, pull.Running, ""); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("finish as running: %v, want EINVALID", err)
	}
	if _, err := s.CancelBackfill(asOperator, p.TenantID, 9999); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("cancel unknown: %v", err)
	}
	if got := auditActions(t, s, p.TenantID); len(got) != 2 || got[1] != "backfill_cancel backfill job "+itoa(running.ID)+" by ann@example.com" {
		t.Fatalf("audit: %v", got)
	}
	if got := auditActions(t, s, other.TenantID); len(got) != 2 || got[1] != "backfill_cancel backfill job "+itoa(queued.ID)+" by ann@example.com" {
		t.Fatalf("audit of the other tenant: %v", got)
	}
}

// TestFinishFailed: a failed job keeps its reason and its counts.
func TestFinishFailed(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	job := start(t, s, p, time.Hour, "")
	if _, ok, _ := s.ClaimBackfill(ctx); !ok {
		t.Fatal("no claim")
	}
	if err := s.FinishBackfill(ctx, p.TenantID, job.ID, pull.Progress{Events: 7}, pull.Failed, "crm has no API credentials"); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Backfill(ctx, p.TenantID, job.ID)
	if j.State != pull.Failed || j.Error != "crm has no API credentials" || j.Events != 7 || j.FinishedAt.IsZero() {
		t.Fatalf("failed: %+v", j)
	}
	if cancel, err := s.ReportBackfill(ctx, p.TenantID, job.ID, pull.Progress{}); !cancel || err != nil {
		t.Fatalf("report on an ended job: %v %v, want cancel", cancel, err)
	}
}

// TestTenantIsolation: another tenant reaches none of a tenant's jobs,
// even with their ids.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")
	job := start(t, s, p, time.Hour, "")
	ctx := context.Background()
	if _, err := s.Backfill(ctx, other.TenantID, job.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("read: %v", err)
	}
	if _, err := s.CancelBackfill(asOperator, other.TenantID, job.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("cancel: %v", err)
	}
	if list, err := s.Backfills(ctx, other.TenantID, p.ID, 10); err != nil || len(list) != 0 {
		t.Errorf("list: %v %v", list, err)
	}
	now := time.Now()
	if _, err := s.StartBackfill(asOperator, other.TenantID, p.ID, now.Add(-time.Hour), now, "", false); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("start with another tenant's provider: %v", err)
	}
	if _, ok, _ := s.ClaimBackfill(ctx); !ok {
		t.Fatal("no claim")
	}
	if _, err := s.ReportBackfill(ctx, other.TenantID, job.ID, pull.Progress{Events: 9}); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBackfill(ctx, other.TenantID, job.ID, pull.Progress{}, pull.Done, ""); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Errorf("finish as another tenant: %v", err)
	}
	if j, _ := s.Backfill(ctx, p.TenantID, job.ID); j.State != pull.Running || j.Events != 0 {
		t.Errorf("job after the other tenant's calls: %+v", j)
	}
	withCredentials(t, s, p)
	if last, err := s.LastSweeps(ctx, other.TenantID); err != nil || len(last) != 0 {
		t.Errorf("other tenant's last sweeps: %v %v", last, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
