package maintain_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// keptRevisions lists a record's accepted revisions (property:revision for
// property changes), oldest first.
func keptRevisions(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, objectID string) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `
SELECT coalesce(property || ':', '') || revision FROM accepted_revisions
WHERE tenant_id = $1 AND provider_id = $2 AND object_id = $3 ORDER BY id`, p.TenantID, p.ID, objectID)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

func TestHistoryRetention(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	hs := pgtest.Provider(t, s, "acme", "hs")
	ctx := pgtest.AsCLI(context.Background())
	now := time.Now()
	daysAgo := func(n int) time.Time { return now.Add(-time.Duration(n) * 24 * time.Hour) }
	if _, err := s.EnsurePartitions(ctx, daysAgo(41), 41); err != nil {
		t.Fatal(err)
	}
	ingestAt := func(p domain.ProviderEndpoint, e domain.Event, days int) domain.Result {
		t.Helper()
		d := pgtest.Delivery(p)
		d.ReceivedAt = daysAgo(days)
		r, err := s.Ingest(ctx, d, p, []domain.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	// c-1 moved on yesterday; c-2's latest revision is older than any retention.
	ingestAt(crm, pgtest.Event("a1", "c-1", 1, `{"v":1}`), 40)
	ingestAt(crm, pgtest.Event("a2", "c-1", 2, `{"v":2}`), 35)
	ingestAt(crm, pgtest.Event("a3", "c-1", 3, `{"v":3}`), 1)
	ingestAt(crm, pgtest.Event("b1", "c-2", 1, `{"v":1}`), 40)
	ingestAt(crm, pgtest.Event("b2", "c-2", 2, `{"v":2}`), 38)
	// Per property: jobtitle moved on 35 days ago; email and the creation never did.
	ingestAt(hs, pgtest.Change("h0", domain.PropertyCreated, "", 100), 40)
	ingestAt(hs, pgtest.Change("h1", "jobtitle", "Analyst", 300), 40)
	ingestAt(hs, pgtest.Change("h2", "email", "ada@example.com", 200), 38)
	ingestAt(hs, pgtest.Change("h3", "jobtitle", "Director", 400), 35)
	// Conflicts resolved 40 days ago: one kept, which goes, one adopted,
	// whose snapshot is c-4's latest revision, which stays; one left open.
	ingestAt(crm, pgtest.Event("k1", "c-3", 1, `{"v":1}`), 40)
	kept := ingestAt(crm, pgtest.Event("k1x", "c-3", 1, `{"v":"x"}`), 40)
	ingestAt(crm, pgtest.Event("d1", "c-4", 1, `{"v":1}`), 40)
	adopted := ingestAt(crm, pgtest.Event("d1x", "c-4", 1, `{"v":"x"}`), 40)
	ingestAt(crm, pgtest.Event("o1", "c-5", 1, `{"v":1}`), 40)
	open := ingestAt(crm, pgtest.Event("o1x", "c-5", 1, `{"v":"x"}`), 40)
	for _, c := range []struct {
		r          domain.Result
		resolution string
	}{{kept, domain.ResolveKeep}, {adopted, domain.ResolveAdopt}} {
		if _, err := s.ResolveConflict(ctx, crm.TenantID, c.r.ConflictID, c.resolution, "", "test"); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE conflicts SET resolved_at = $1 WHERE status <> 'open'`, daysAgo(40))
	exec(`UPDATE accepted_revisions SET applied_at = $1 WHERE conflict_id IS NOT NULL`, daysAgo(40))

	// A history retention of 39 days, in batches of two: what is older goes.
	s.SetHistoryRetention(39 * 24 * time.Hour)
	r, err := s.CleanupInBatches(ctx, now, testRetention, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.PrunedRevisions != 4 || r.PrunedConflicts != 1 {
		t.Fatalf("39 days: %s", r)
	}
	// By default, as long as the log: 30 days.
	s.SetHistoryRetention(0)
	r, err = s.Cleanup(ctx, now, testRetention)
	want := "; removed 1 accepted revisions and 0 resolved conflicts past the history retention"
	if err != nil || r.PrunedRevisions != 1 || r.PrunedConflicts != 0 || !strings.Contains(r.String(), want) {
		t.Fatalf("30 days: %s, %v", r, err)
	}
	if r, err = s.Cleanup(ctx, now, testRetention); err != nil || r.PrunedRevisions+r.PrunedConflicts != 0 {
		t.Fatalf("again: %s, %v", r, err)
	}

	for _, c := range []struct {
		p    domain.ProviderEndpoint
		id   string
		want []string
	}{
		{crm, "c-1", []string{"3"}},
		{crm, "c-2", []string{"2"}},
		{crm, "c-3", []string{"1"}},
		{crm, "c-4", []string{"1"}}, // the adopted snapshot, not the one it replaced
		{hs, "c-1", []string{"$created:100", "email:200", "jobtitle:400"}},
	} {
		if got := keptRevisions(t, s, c.p, c.id); !slices.Equal(got, c.want) {
			t.Errorf("%s/%s keeps %v, want %v", c.p.Name, c.id, got, c.want)
		}
	}
	var conflicts []int64
	rows, _ := s.Pool().Query(ctx, `SELECT id FROM conflicts ORDER BY id`)
	if conflicts, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	if want := []int64{adopted.ConflictID, open.ConflictID}; !slices.Equal(conflicts, want) {
		t.Errorf("conflicts %v, want %v (the adopted one and the open one)", conflicts, want)
	}
	var adoption string
	if err := s.Pool().QueryRow(ctx, `SELECT snapshot::text FROM accepted_revisions WHERE conflict_id = $1`, adopted.ConflictID).
		Scan(&adoption); err != nil || adoption != `{"v": "x"}` {
		t.Errorf("adopted revision %s, %v", adoption, err)
	}

	// What retention kept still reconciles, application counts included.
	report, err := s.Reconcile(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WantViolations(t, report, "", 0, "")
}

// The history retention deletes old revisions of records that ingest is
// changing at that moment: ingest never waits for it, and what both leave
// reconciles (every application is either kept or counted as pruned).
func TestHistoryRetentionNeverBlocksIngest(t *testing.T) {
	testdb.SkipOnCitus(t, "it watches lock waits on the coordinator's backends, and on Citus the row locks are taken on the workers")
	t.Parallel()
	url := testdb.NewURL(t)
	const ingestApp = "ingest"
	in := pgtest.StoreOn(t, postgres.New, url, ingestApp, 4)
	maint := pgtest.StoreOn(t, postgres.New, url, "maintenance caller", 2)
	crm, hs := pgtest.Provider(t, in, "acme", "crm"), pgtest.Provider(t, in, "acme", "hs")
	ctx := context.Background()
	const records, history = 40, 20
	for i := range records {
		var standard, properties []domain.Event
		for rev := range history {
			e := pgtest.Event(fmt.Sprintf("old-%d-%d", i, rev), fmt.Sprintf("c-%d", i), int64(rev+1), fmt.Sprintf(`{"v":%d}`, rev))
			e.Seq = rev
			standard = append(standard, e)
			c := pgtest.Change(fmt.Sprintf("old-%d-%d", i, rev), "jobtitle", fmt.Sprint(rev), int64(rev+1))
			c.ObjectID, c.Seq = fmt.Sprintf("c-%d", i), rev
			properties = append(properties, c)
		}
		for _, d := range []struct {
			p      domain.ProviderEndpoint
			events []domain.Event
		}{{crm, standard}, {hs, properties}} {
			if _, err := in.Ingest(ctx, pgtest.Delivery(d.p), d.p, d.events); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Applied long ago, as far as retention can tell; the log is today's.
	if _, err := in.Pool().Exec(ctx, `UPDATE accepted_revisions SET applied_at = (applied_at AT TIME ZONE 'UTC' - interval '40 days') AT TIME ZONE 'UTC'`); err != nil {
		t.Fatal(err)
	}

	stop, start := make(chan struct{}), make(chan struct{})
	waits := pgtest.WaitsOnOthers(t, url, ingestApp, stop)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		delivered int
		failures  []string
	)
	for w := range 4 {
		wg.Go(func() {
			<-start
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i, rev := (w*7+n)%records, int64(history+1+n)
				p, e := crm, pgtest.Event(fmt.Sprintf("new-%d-%d", w, n), fmt.Sprintf("c-%d", i), rev*10+int64(w), `{"v":"new"}`)
				if n%2 == 1 {
					p, e = hs, pgtest.Change(e.EventID, "jobtitle", "new", rev*10+int64(w))
					e.ObjectID = fmt.Sprintf("c-%d", i)
				}
				_, err := in.Ingest(ctx, pgtest.Delivery(p), p, []domain.Event{e})
				mu.Lock()
				delivered++
				if err != nil {
					failures = append(failures, err.Error())
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	time.Sleep(50 * time.Millisecond)
	r, err := maint.CleanupInBatches(ctx, time.Now(), testRetention, 5)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; %d deliveries meanwhile", r, delivered)
	for _, f := range failures {
		t.Errorf("delivery failed: %s", f)
	}
	for _, w := range <-waits {
		t.Errorf("ingest waited %s on another backend: %s", w.Waited, w.What)
	}
	// Every old revision goes but each record's latest, unless a newer one
	// arrived during the pass.
	if least, most := int64(2*records*(history-1)), int64(2*records*history); r.PrunedRevisions < least || r.PrunedRevisions > most {
		t.Errorf("pruned %d revisions, want %d to %d", r.PrunedRevisions, least, most)
	}
	report, err := maint.Reconcile(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WantViolations(t, report, "", 0, "")
}

// After a reset, history retention keeps the highest revision accepted
// since the reset, even when an older, higher one from before it remains:
// that is the one reconciliation compares the record with.
func TestHistoryRetentionKeepsWhatFollowsAReset(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	now := time.Now()
	daysAgo := func(n int) time.Time { return now.Add(-time.Duration(n) * 24 * time.Hour) }
	if _, err := s.EnsurePartitions(ctx, daysAgo(41), 41); err != nil {
		t.Fatal(err)
	}
	ingestAt := func(e domain.Event, days int) {
		t.Helper()
		d := pgtest.Delivery(crm)
		d.ReceivedAt = daysAgo(days)
		if _, err := s.Ingest(ctx, d, crm, []domain.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	ingestAt(pgtest.Event("a9", "c-1", 9, `{"v":9}`), 40)
	if _, err := s.ResetRecord(ctx, crm.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}); err != nil {
		t.Fatal(err)
	}
	ingestAt(pgtest.Event("a2", "c-1", 2, `{"v":2}`), 39)
	s.SetHistoryRetention(7 * 24 * time.Hour)
	if _, err := s.CleanupInBatches(ctx, now, testRetention, 10); err != nil {
		t.Fatal(err)
	}
	if got := keptRevisions(t, s, crm, "c-1"); !slices.Contains(got, "2") {
		t.Fatalf("revisions kept %v: the one accepted since the reset is gone", got)
	}
	report, err := s.Reconcile(ctx, crm.TenantID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if report.Total() != 0 {
		t.Fatalf("reconciliation after retention: %s", report.Summary())
	}
}
