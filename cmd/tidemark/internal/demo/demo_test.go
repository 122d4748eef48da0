package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// TestSeed fills a fresh demo tenant and checks that every page of the
// console has something to show: each outcome, open and resolved
// conflicts, refused deliveries, several providers, people, a paused
// destination, a finished replay job and more than a week of days.
func TestSeed(t *testing.T) {
	t.Parallel()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, store); err != nil {
		t.Fatal(err)
	}
	tenant, err := store.Tenant(ctx, Tenant)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	before := time.Now()
	if err := Seed(ctx, store, &out); err != nil {
		t.Fatalf("Seed: %v\n%s", err, out.String())
	}
	// How long it takes (the first start waits for it) is logged, not
	// asserted: a loaded machine is no defect of the seed.
	t.Logf("%s in %s", strings.TrimSpace(out.String()), time.Since(before))
	if !strings.Contains(out.String(), "Demo history:") {
		t.Errorf("no progress line: %q", out.String())
	}
	db := store.Pool()
	count := func(sql string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(ctx, sql, append([]any{tenant.ID}, args...)...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}

	for _, o := range domain.Outcomes {
		if n := count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = $2`, o); n == 0 {
			t.Errorf("no %s event", o)
		}
	}
	if n := count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = 'rejected' AND reason = 'data.contact_id is missing'`); n != 1 {
		t.Errorf("%d events rejected for a missing contact_id, want 1", n)
	}
	if n := count(`SELECT count(DISTINCT object_id) FROM records WHERE tenant_id = $1 AND object_type = 'contact'`); n < 20 {
		t.Errorf("%d contacts, want at least 20", n)
	}
	if n := count(`SELECT count(*) FROM records WHERE tenant_id = $1 AND object_type = 'deal'`); n == 0 {
		t.Error("no deals")
	}

	if n := count(`SELECT count(*) FROM conflicts WHERE tenant_id = $1 AND status = 'open'`); n < 2 {
		t.Errorf("%d open conflicts, want at least 2", n)
	}
	for _, status := range []string{domain.ConflictKept, domain.ConflictAdopted} {
		if n := count(`SELECT count(*) FROM conflicts WHERE tenant_id = $1 AND status = $2 AND resolved_by = $3`, status, Email); n < 1 {
			t.Errorf("no conflict %s by %s", status, Email)
		}
	}
	// The adopted snapshot is now the contact's.
	if n := count(`SELECT count(*) FROM records r JOIN conflicts c ON c.tenant_id = r.tenant_id AND c.provider_id = r.provider_id
		AND c.object_type = r.object_type AND c.object_id = r.object_id
		WHERE r.tenant_id = $1 AND c.status = 'adopted' AND r.snapshot = c.conflicting_snapshot`); n != 1 {
		t.Errorf("%d contacts carry their adopted snapshot, want 1", n)
	}

	for _, c := range []struct {
		status    int
		signature string
	}{{401, domain.SignatureInvalid}, {401, domain.SignatureExpired}, {413, domain.SignatureUnchecked}} {
		if n := count(`SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = $2 AND signature = $3`, c.status, c.signature); n < 1 {
			t.Errorf("no refused delivery with status %d and signature %s", c.status, c.signature)
		}
	}
	if n := count(`SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status <> 200`); n < 3 {
		t.Errorf("%d refused deliveries, want at least 3", n)
	}
	if n := count(`SELECT count(DISTINCT provider_id) FROM events WHERE tenant_id = $1`); n < 3 {
		t.Errorf("events from %d providers, want 3", n)
	}

	// History spreads over the last days and never lies in the future.
	var first, last time.Time
	if err := db.QueryRow(ctx, `SELECT min(received_at), max(received_at) FROM deliveries WHERE tenant_id = $1`, tenant.ID).
		Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if first.After(before.Add(-7*24*time.Hour)) || last.After(time.Now()) || last.Before(before.Add(-3*time.Hour)) {
		t.Errorf("deliveries from %s to %s, want more than the last week up to now", first, last)
	}
	if n := count(`SELECT count(DISTINCT date_trunc('day', received_at, 'UTC')) FROM deliveries
		WHERE tenant_id = $1 AND received_at > now() - interval '7 days'`); n < 6 {
		t.Errorf("deliveries on %d days of the last week, want at least 6", n)
	}

	// The README's JSON containment example finds an event.
	if n := count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND snapshot @> '{"job_title": "Director"}'`); n == 0 {
		t.Error(`no event's snapshot contains {"job_title": "Director"}`)
	}
	// Webinar signups made people.
	if n := count(`SELECT count(*) FROM people WHERE tenant_id = $1`); n < 3 {
		t.Errorf("%d people, want at least 3", n)
	}

	// A paused destination that never sent anything, with changes waiting.
	ds, err := store.Destinations(ctx, tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Status != "paused" || ds[0].URL != DestinationURL {
		t.Errorf("destinations %+v, want one paused at %s", ds, DestinationURL)
	}
	if n := count(`SELECT count(*) FROM destination_attempts WHERE tenant_id = $1`); n != 0 {
		t.Errorf("the demo destination has %d attempts, want none", n)
	}

	// The replay job replayed billing's rejected deals: applied, and one
	// stale (overtaken meanwhile).
	jobs, _, err := store.ReplayJobs(ctx, tenant.ID, domain.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Status != domain.ReplayDone || jobs[0].Done != 3 ||
		jobs[0].Counts[string(domain.Applied)] != 2 || jobs[0].Counts[string(domain.Stale)] != 1 {
		t.Errorf("replay jobs %+v, want one done: 3 deliveries, 2 applied, 1 stale", jobs)
	}
	if n := count(`SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND replay_of IS NOT NULL`); n != 3 {
		t.Errorf("%d replayed deliveries, want 3", n)
	}
	// Every provider was connected before its first delivery.
	if n := count(`SELECT count(*) FROM providers p WHERE p.tenant_id = $1
		AND p.created_at > (SELECT min(d.received_at) FROM deliveries d WHERE d.tenant_id = p.tenant_id AND d.provider_id = p.id)`); n != 0 {
		t.Errorf("%d providers were connected after their first delivery", n)
	}
	// The job's page lists them: they were received while it ran.
	if len(jobs) == 1 {
		listed, _, _, err := store.ReplayJobDeliveries(ctx, jobs[0], "", domain.Page{Limit: 10})
		if err != nil || len(listed) != 3 {
			t.Errorf("the replay job lists %d deliveries (%v), want its 3", len(listed), err)
		}
	}
	if n := count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = 'rejected' AND reason LIKE 'scope deal.snapshot is disabled%'`); n != 3 {
		t.Errorf("%d events rejected by the disabled scope, want 3", n)
	}

	// The counters agree with the event log.
	stats, err := store.Stats(ctx, tenant.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range domain.Outcomes {
		if n := count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND outcome = $2`, o); stats[o] != int64(n) {
			t.Errorf("stats[%s] = %d, event log has %d", o, stats[o], n)
		}
	}

	// The command serve prints (contact c-1001) still finds the contact
	// new, so it is applied.
	if n := count(`SELECT count(*) FROM records WHERE tenant_id = $1 AND object_id = 'c-1001'`); n != 0 {
		t.Errorf("the demo history holds contact c-1001, which the printed test command sends")
	}
}
