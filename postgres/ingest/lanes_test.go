package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// laneTenants are the tenants whose deliveries the lane tests mix; each
// has a provider "crm", and the same event and contact ids as the others.
var laneTenants = []string{"acme", "globex", "initech", "umbrella"}

// laneProviders is setup's provider of acme and the other laneTenants'
// providers, created on s.
func laneProviders(t *testing.T, s *postgres.Store, acme domain.ProviderEndpoint) []domain.ProviderEndpoint {
	t.Helper()
	ps := []domain.ProviderEndpoint{acme}
	for _, tenant := range laneTenants[1:] {
		ps = append(ps, newProvider(t, s, tenant, "crm"))
	}
	return ps
}

// feedOf is a tenant's change feed as its consumer reads it, each change
// written out without what differs between two databases (times, ids).
func feedOf(t *testing.T, s *postgres.Store, tenantID int64) []string {
	t.Helper()
	var changes []string
	for _, c := range feed(t, s, tenantID, 0, 100) {
		changes = append(changes, fmt.Sprintf("%d %s %s/%s %v<-%v %v %s %s", c.Position, c.Type, c.ObjectType, c.ObjectID,
			deref64(c.Revision), deref64(c.PreviousRevision), c.Changed, c.Snapshot, c.EventID))
	}
	return changes
}

func deref64(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

// TestTenantsSharingGroupsMatchEachAlone: the deliveries of four tenants,
// each a random history over the same event and record ids, mixed into
// groups of random sizes (each tenant's in arrival order) get exactly the
// outcomes, records, leads and change feeds they get written one event at
// a time, tenant by tenant.
func TestTenantsSharingGroupsMatchEachAlone(t *testing.T) {
	testdb.SkipOnCitus(t, "a group on Citus holds one tenant's deliveries (lanes.go)")
	t.Parallel()
	alone, acmeAlone := setup(t)
	grouped, acmeGrouped := setup(t)
	pa, pg := laneProviders(t, alone, acmeAlone), laneProviders(t, grouped, acmeGrouped)
	rng := rand.New(rand.NewPCG(11, 13))
	histories := make([][][]domain.Event, len(laneTenants))
	for i := range histories {
		histories[i] = randomHistory(t, rng, 120)
	}
	want := make([][][]domain.Result, len(laneTenants))
	for i, history := range histories {
		for _, events := range history {
			var results []domain.Result
			for _, e := range events {
				job := newJob(t, alone, pa[i], e)
				if err := alone.CommitGroup(job)[0]; err != nil {
					t.Fatal(err)
				}
				results = append(results, job.Results()...)
			}
			want[i] = append(want[i], results)
		}
	}
	// Every tenant's deliveries, in arrival order, interleaved at random.
	type next struct{ tenant, delivery int }
	var order []next
	for i, history := range histories {
		for d := range history {
			order = append(order, next{i, d})
		}
	}
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	seen := make([]int, len(laneTenants))
	for n := range order {
		order[n].delivery = seen[order[n].tenant]
		seen[order[n].tenant]++
	}
	got := make([][][]domain.Result, len(laneTenants))
	mixed := 0
	for start := 0; start < len(order); {
		n := min(1+rng.IntN(40), len(order)-start)
		var jobs []*ingest.Job
		tenants := map[int]bool{}
		for _, o := range order[start : start+n] {
			jobs = append(jobs, newJob(t, grouped, pg[o.tenant], append([]domain.Event(nil), histories[o.tenant][o.delivery]...)...))
			tenants[o.tenant] = true
		}
		if len(tenants) > 1 {
			mixed++
		}
		for k, err := range grouped.CommitGroup(jobs...) {
			if err != nil {
				t.Fatalf("group at %d, delivery %d: %v", start, k, err)
			}
			tenant := order[start+k].tenant
			got[tenant] = append(got[tenant], jobs[k].Results())
		}
		start += n
	}
	if mixed == 0 {
		t.Fatal("no group mixed tenants: the test proves nothing")
	}
	for i, tenant := range laneTenants {
		for d := range want[i] {
			for j := range want[i][d] {
				w, g := want[i][d][j], got[i][d][j]
				if w.Outcome != g.Outcome || w.Reason != g.Reason || !reflect.DeepEqual(w.CurrentRevision, g.CurrentRevision) {
					t.Errorf("%s delivery %d event %s: alone %s %q (current %v), grouped %s %q (current %v)",
						tenant, d, w.EventID, w.Outcome, w.Reason, w.CurrentRevision, g.Outcome, g.Reason, g.CurrentRevision)
				}
			}
		}
		for _, contact := range []string{"c-0", "c-3", "c-7", "c-11", "p-0", "p-2", "p-5"} {
			ra, sa, na := record(t, alone, pa[i], contact)
			rg, sg, ng := record(t, grouped, pg[i], contact)
			if ra != rg || sa != sg || na != ng {
				t.Errorf("%s %s: alone %d %s ×%d, grouped %d %s ×%d", tenant, contact, ra, sa, na, rg, sg, ng)
			}
		}
		if a, g := fmt.Sprint(leadCounts(t, alone, pa[i].TenantID)), fmt.Sprint(leadCounts(t, grouped, pg[i].TenantID)); a != g {
			t.Errorf("%s leads (people, accounts, tasks, members): alone %s, grouped %s", tenant, a, g)
		}
		fa, fg := feedOf(t, alone, pa[i].TenantID), feedOf(t, grouped, pg[i].TenantID)
		if len(fa) == 0 || !reflect.DeepEqual(fa, fg) {
			t.Errorf("%s change feed: alone %d changes, grouped %d; first difference at %d", tenant, len(fa), len(fg), firstDifference(fa, fg))
		}
		if a, g := counters(t, alone, pa[i]), counters(t, grouped, pg[i]); !reflect.DeepEqual(a, g) {
			t.Errorf("%s outcome counters: alone %v, grouped %v", tenant, a, g)
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSparseTenantsShareTransactions: deliveries sent together through
// Ingest, each to another tenant, share transactions in their lane, and
// each is answered with its own tenant's outcome. Per tenant there is one
// delivery, so a committer per tenant would have written each alone. The
// transactions are counted by the xmin of the delivery rows they wrote.
func TestSparseTenantsShareTransactions(t *testing.T) {
	testdb.SkipOnCitus(t, "a group on Citus holds one tenant's deliveries (lanes.go)")
	t.Parallel()
	s, err := postgres.New(testdb.New(t), testKey)
	if err != nil {
		t.Fatal(err)
	}
	s.SetLanes(1)
	const n = 48
	ps := make([]domain.ProviderEndpoint, n)
	for i := range ps {
		ps[i] = newProvider(t, s, fmt.Sprintf("tenant-%02d", i), "crm")
	}
	ctx := context.Background()
	// The scopes first, outside the measured transactions.
	for _, p := range ps {
		wantOutcome(t, ingestOne(t, s, p, event("warm", "c-warm", 1, `{}`)), domain.Applied)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([][]domain.Result, n)
	errs := make([]error, n)
	ids := make([]string, n)
	for i, p := range ps {
		d := delivery(p)
		ids[i] = d.ID
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Ingest(ctx, d, p, []domain.Event{event("e-1", "c-1", 1, fmt.Sprintf(`{"t":%d}`, i))})
		})
	}
	close(start)
	wg.Wait()
	for i, p := range ps {
		if errs[i] != nil || len(results[i]) != 1 {
			t.Fatalf("tenant %d: %v %v", i, errs[i], results[i])
		}
		wantOutcome(t, results[i][0], domain.Applied)
		if rev, snap, _ := record(t, s, p, "c-1"); rev != 1 || snap != fmt.Sprintf(`{"t": %d}`, i) {
			t.Errorf("tenant %d holds c-1 at %d %s", i, rev, snap)
		}
		if f := feedOf(t, s, p.TenantID); len(f) != 2 || f[1][:2] != "2 " {
			t.Errorf("tenant %d's feed: %q, want positions 1 and 2", i, f)
		}
	}
	var deliveries, transactions int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM deliveries WHERE id = ANY($1::uuid[])`,
		ids).Scan(&deliveries, &transactions); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries of %d tenants in %d transactions", deliveries, n, transactions)
	if deliveries != n || transactions >= n {
		t.Fatalf("%d deliveries of %d tenants stored by %d transactions: no group held two tenants", deliveries, n, transactions)
	}
}

// TestTenantWaitingOnALockHoldsNoLaneMate: a tenant's delivery that waits
// on a row lock another transaction holds (another node, a repair) keeps
// its lane's other tenants waiting only until its group gives up the wait;
// then it waits alone, seen in pg_locks, while the other tenant's delivery
// is written and answered, and it is applied once the lock is released.
func TestTenantWaitingOnALockHoldsNoLaneMate(t *testing.T) {
	testdb.SkipOnCitus(t, "on Citus each tenant is a lane of its own (lanes.go)")
	t.Parallel()
	s, acme := setup(t)
	globex := newProvider(t, s, "globex", "crm")
	s.SetLanes(1) // one lane: on PostgreSQL both tenants share it
	ctx := context.Background()
	wantOutcome(t, ingestOne(t, s, acme, event("e1", "c-1", 1, `{"v":1}`)), domain.Applied)
	wantOutcome(t, ingestOne(t, s, globex, event("e1", "c-1", 1, `{"v":1}`)), domain.Applied)

	lock, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT FROM records WHERE tenant_id = $1 AND object_id = 'c-1' FOR UPDATE`, acme.TenantID); err != nil {
		t.Fatal(err)
	}
	stuck := ingestAsync(ctx, s, acme, event("e2", "c-1", 2, `{"v":2}`))
	waiting := func() bool {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE NOT l.granted AND a.datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	pollFor(t, raceTimeout, "acme's delivery to wait on the row lock", waiting)

	mate := await(t, ingestAsync(ctx, s, globex, event("e2", "c-1", 2, `{"v":2}`)), "globex's delivery")
	if mate.err != nil {
		t.Fatal(mate.err)
	}
	wantOutcome(t, mate.result, domain.Applied)
	select {
	case r := <-stuck:
		t.Fatalf("acme's delivery was answered while its record was locked: %+v", r)
	default:
	}
	if !waiting() {
		t.Fatal("acme's delivery no longer waits on the lock, yet it is not answered")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := await(t, stuck, "acme's delivery after the lock's release")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantOutcome(t, r.result, domain.Applied)
}
