package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// newJob is a delivery of events as the committer receives it.
func newJob(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, events ...domain.Event) *ingest.Job {
	t.Helper()
	for i := range events {
		events[i].Seq = i
	}
	job, err := s.NewJob(context.Background(), delivery(p), p, events)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// TestGroupKeepsArrivalOrder: deliveries of one record in one group are
// decided in the order they arrived, exactly as one at a time.
func TestGroupKeepsArrivalOrder(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	jobs := []*ingest.Job{
		newJob(t, s, p, event("e1", "c-1", 2, `{"v":"two"}`)),
		newJob(t, s, p, event("e2", "c-1", 1, `{"v":"one"}`)),
		newJob(t, s, p, event("e3", "c-2", 1, `{"v":"one"}`)),
		newJob(t, s, p, event("e4", "c-2", 2, `{"v":"two"}`)),
		newJob(t, s, p, event("e3", "c-2", 1, `{"v":"one"}`)),  // the same event again
		newJob(t, s, p, event("e5", "c-2", 2, `{"v":"deux"}`)), // same revision, other content
		newJob(t, s, p, event("e6", "c-3", -1, `{"v":"x"}`)),
	}
	for i, err := range s.CommitGroup(jobs...) {
		if err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	want := []domain.Outcome{domain.Applied, domain.Stale, domain.Applied, domain.Applied, domain.Duplicate,
		domain.RevisionConflict, domain.Unversioned}
	for i, job := range jobs {
		wantOutcome(t, job.Results()[0], want[i])
	}
	if rev, snap, n := record(t, s, p, "c-2"); rev != 2 || snap != `{"v": "two"}` || n != 2 {
		t.Fatalf("c-2 at revision %d %s, applied %d times; want 2 {\"v\": \"two\"} twice", rev, snap, n)
	}
	if rev, _, n := record(t, s, p, "c-1"); rev != 2 || n != 1 {
		t.Fatalf("c-1 at revision %d, applied %d times; want 2 once", rev, n)
	}
}

// TestGroupWithAPoisonedDelivery: a delivery that fails in PostgreSQL fails
// alone; the others of its group are written and answered.
func TestGroupWithAPoisonedDelivery(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	createTrigger(t, s, `
CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.object_id = 'poison' THEN
        RAISE EXCEPTION 'poisoned record';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER poison BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION poison();`)
	jobs := []*ingest.Job{
		newJob(t, s, p, event("e1", "c-1", 1, `{}`)),
		newJob(t, s, p, event("e2", "poison", 1, `{}`), event("e3", "c-3", 1, `{}`)),
		newJob(t, s, p, event("e4", "c-4", 1, `{}`)),
	}
	errs := s.CommitGroup(jobs...)
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors %v: want only the poisoned delivery's", errs)
	}
	wantOutcome(t, jobs[0].Results()[0], domain.Applied)
	wantOutcome(t, jobs[2].Results()[0], domain.Applied)
	var deliveries, events int
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries), (SELECT count(*) FROM events)`).Scan(&deliveries, &events); err != nil {
		t.Fatal(err)
	}
	if deliveries != 2 || events != 2 {
		t.Fatalf("%d deliveries and %d events stored, want the two good ones and nothing of the poisoned one", deliveries, events)
	}
}

// randomHistory is n deliveries of 1 to 4 events each, over few records,
// properties and leads, so that a group often holds several events of one
// record, key or lead: whole snapshots (some unversioned), property
// changes and deletions, lead signups, rejected events, and reused event
// ids, some redelivered as they were and some with other content.
func randomHistory(t *testing.T, rng *rand.Rand, n int) [][]domain.Event {
	var history [][]domain.Event
	for i := range n {
		var events []domain.Event
		for j := range 1 + rng.IntN(4) {
			id := fmt.Sprintf("e-%d-%d", i, j)
			var e domain.Event
			switch k := rng.IntN(10); {
			case k < 5:
				e = event(id, fmt.Sprintf("c-%d", rng.IntN(12)), int64(rng.IntN(6))-1, fmt.Sprintf(`{"v":%d}`, rng.IntN(3)))
			case k < 8:
				property := []string{"jobtitle", "city", "phone", domain.PropertyDeleted}[rng.IntN(4)]
				e = change(id, property, fmt.Sprintf("v%d", rng.IntN(3)), int64(rng.IntN(8)))
				e.ObjectID = fmt.Sprintf("p-%d", rng.IntN(6))
			case k < 9:
				e = signup(t, id, fmt.Sprintf("lead%d@example.com", rng.IntN(5)), []string{"spring", "autumn"}[rng.IntN(2)])
			default:
				e = event(id, fmt.Sprintf("c-%d", rng.IntN(12)), 1, `{"v":1}`)
				e.RejectReason = "malformed for the test"
			}
			if rng.IntN(6) == 0 && len(history) > 0 {
				prev := history[rng.IntN(len(history))][0]
				if rng.IntN(2) == 0 {
					e = prev // redelivered as it was
				} else {
					e.EventID = prev.EventID // reused with other content
				}
			}
			events = append(events, e)
		}
		history = append(history, events)
	}
	return history
}

// TestGroupedOutcomesMatchOneAtATime writes one random history twice: one
// event at a time (each event its own delivery and transaction), and as
// the deliveries it came in, in groups of random sizes. Every event must
// get the same outcome, reason and current revision, and the records and
// leads must end the same.
func TestGroupedOutcomesMatchOneAtATime(t *testing.T) {
	t.Parallel()
	alone, pa := setup(t)
	grouped, pg := setup(t)
	rng := rand.New(rand.NewPCG(7, 9))
	history := randomHistory(t, rng, 300)
	var want, got [][]domain.Result
	for _, events := range history {
		var results []domain.Result
		for _, e := range events {
			job := newJob(t, alone, pa, e)
			if err := alone.CommitGroup(job)[0]; err != nil {
				t.Fatal(err)
			}
			results = append(results, job.Results()...)
		}
		want = append(want, results)
	}
	for start := 0; start < len(history); {
		n := min(1+rng.IntN(40), len(history)-start)
		var jobs []*ingest.Job
		for _, events := range history[start : start+n] {
			jobs = append(jobs, newJob(t, grouped, pg, append([]domain.Event(nil), events...)...))
		}
		for i, err := range grouped.CommitGroup(jobs...) {
			if err != nil {
				t.Fatalf("group at %d, delivery %d: %v", start, i, err)
			}
			got = append(got, jobs[i].Results())
		}
		start += n
	}
	outcomes := map[domain.Outcome]int{}
	for i := range want {
		for j := range want[i] {
			w, g := want[i][j], got[i][j]
			outcomes[w.Outcome]++
			if w.Outcome != g.Outcome || w.Reason != g.Reason || !reflect.DeepEqual(w.CurrentRevision, g.CurrentRevision) {
				t.Errorf("delivery %d event %s: one at a time %s %q (current %v), grouped %s %q (current %v)",
					i, w.EventID, w.Outcome, w.Reason, w.CurrentRevision, g.Outcome, g.Reason, g.CurrentRevision)
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	for _, outcome := range []domain.Outcome{domain.Applied, domain.Duplicate, domain.EventConflict, domain.Stale,
		domain.Redundant, domain.RevisionConflict, domain.Unversioned, domain.Rejected} {
		if outcomes[outcome] == 0 {
			t.Errorf("the history has no %s event; it should exercise every outcome", outcome)
		}
	}
	for _, contact := range []string{"c-0", "c-3", "c-7", "c-11", "p-0", "p-2", "p-5"} {
		ra, sa, na := record(t, alone, pa, contact)
		rg, sg, ng := record(t, grouped, pg, contact)
		if ra != rg || sa != sg || na != ng {
			t.Errorf("%s: one at a time %d %s ×%d, grouped %d %s ×%d", contact, ra, sa, na, rg, sg, ng)
		}
	}
	pa1, aa, ta, ma := leadCounts(t, alone, pa.TenantID)
	pg1, ag, tg, mg := leadCounts(t, grouped, pg.TenantID)
	if pa1 != pg1 || aa != ag || ta != tg || ma != mg {
		t.Errorf("leads: one at a time %d people %d accounts %d tasks %d members, grouped %d %d %d %d", pa1, aa, ta, ma, pg1, ag, tg, mg)
	}
}

// TestConcurrentDeliveriesShareGroups: deliveries sent together through
// Ingest are written in fewer transactions than deliveries, and each one
// is answered with its own outcome. The transactions are counted by the
// xmin of the delivery rows they wrote: pg_stat_database's commits also
// count, on Citus, the transactions the nodes open to one another.
func TestConcurrentDeliveriesShareGroups(t *testing.T) {
	t.Parallel()
	s, err := postgres.New(testdb.New(t), testKey)
	if err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, s, "acme", "crm")
	ctx := context.Background()
	const n = 64
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	results := make([][]domain.Result, n)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = s.Ingest(ctx, delivery(p), p, []domain.Event{event(fmt.Sprintf("e-%d", i), fmt.Sprintf("c-%d", i%8), int64(i), `{}`)})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || len(results[i]) != 1 || results[i][0].EventID != fmt.Sprintf("e-%d", i) {
			t.Fatalf("delivery %d: %v %v", i, errs[i], results[i])
		}
	}
	var deliveries, transactions int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM deliveries WHERE tenant_id = $1`,
		p.TenantID).Scan(&deliveries, &transactions); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries in %d transactions", deliveries, transactions)
	if deliveries != n || transactions >= n {
		t.Fatalf("%d deliveries stored by %d transactions, want %d by fewer: none was grouped", deliveries, transactions, n)
	}
}

// TestTenantQueueIsBounded: while a tenant's committer is stuck on a lock,
// its further deliveries wait up to maxQueued; past that, they are refused
// at once as unavailable (503) rather than waiting out their budget.
func TestTenantQueueIsBounded(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetMaxQueued(2)
	ctx := context.Background()
	wantOutcome(t, ingestOne(t, s, p, event("e0", "c-1", 1, `{}`)), domain.Applied)
	lock, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT FROM records WHERE tenant_id = $1 AND object_id = 'c-1' FOR UPDATE`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	send := func(i int) {
		_, err := s.Ingest(ctx, delivery(p), p, []domain.Event{event(fmt.Sprintf("e%d", i), "c-1", int64(i+1), `{}`)})
		errs <- err
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	queued := func() int { return s.Queued(p.TenantID) }
	go send(1) // taken by the committer, which waits on the lock
	waitFor("the committer to wait on the lock", func() bool {
		n, err := testdb.LockWaits(ctx, s.Pool(), "transactionid")
		return err == nil && n == 1
	})
	go send(2)
	go send(3)
	waitFor("two deliveries queued", func() bool { return queued() == 2 })
	_, err = s.Ingest(ctx, delivery(p), p, []domain.Event{event("e4", "c-1", 5, `{}`)})
	if domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Fatalf("a delivery past the tenant's queue: %v, want unavailable", err)
	}
	lock.Rollback(ctx)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("a queued delivery: %v", err)
		}
	}
	// Revisions 3 and 4 were sent at once: either order is an arrival order.
	if rev, _, n := record(t, s, p, "c-1"); rev != 4 || n < 3 {
		t.Fatalf("c-1 at revision %d applied %d times, want revision 4 applied 3 or 4 times", rev, n)
	}
}

// TestDrainWaitsForTheGroupInFlight: Drain returns only once the group a
// committer is writing has committed, even when its sender stopped
// waiting, and refuses the deliveries that come meanwhile, so that a node
// shutting down closes its pools with nothing accepted left unwritten.
func TestDrainWaitsForTheGroupInFlight(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetBeforeCommit(`SELECT pg_sleep(0.5)`)
	ctx, giveUp := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		_, err := s.Ingest(ctx, delivery(p), p, []domain.Event{event("e1", "c-1", 1, `{"v":1}`)})
		sent <- err
	}()
	pollFor(t, 10*time.Second, "the group to be writing", func() bool {
		var n int
		err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%pg_sleep(0.5)%' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})
	giveUp()
	if err := <-sent; err != nil {
		t.Fatalf("the sender that stopped waiting while its group wrote got %v, want the group's answer", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	_, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{event("e2", "c-2", 1, `{"v":1}`)})
	if domain.ErrorCode(err) != domain.EUNAVAILABLE {
		t.Errorf("a delivery during the drain got %v, want EUNAVAILABLE (retry later)", err)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if rev, _, n := record(t, s, p, "c-1"); rev != 1 || n != 1 {
		t.Fatalf("after Drain c-1 is at revision %d applied %d times; want the group committed", rev, n)
	}
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM records WHERE tenant_id = $1 AND object_id = 'c-2'`,
		p.TenantID).Scan(&n); err != nil || n != 0 {
		t.Errorf("the delivery refused during the drain wrote %d records (%v)", n, err)
	}
}

// TestDrainTimesOut: Drain gives up when its context ends first, saying how
// many lanes' committers were still writing.
func TestDrainTimesOut(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetBeforeCommit(`SELECT pg_sleep(1)`)
	go s.Ingest(context.Background(), delivery(p), p, []domain.Event{event("e1", "c-1", 1, `{"v":1}`)})
	pollFor(t, 10*time.Second, "a committer to run", s.Committing)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx); err == nil || !strings.Contains(err.Error(), "ingest lanes still writing: 1") {
		t.Fatalf("Drain = %v, want it to give up naming the committer", err)
	}
}

// TestAnswerSaysWhatWasStored: a sender that stops waiting (its budget
// over) is answered with an error only if nothing of its delivery is
// written: while it still waits in the queue it is dropped, and once its
// group writes it, it gets that group's answer. Before, a delivery whose
// group was writing was answered 503 and then committed, and the
// provider's retry came out duplicate with no answer ever saying applied.
func TestAnswerSaysWhatWasStored(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetBeforeCommit(`SELECT pg_sleep(0.4)`)
	first := make(chan error, 1)
	go func() {
		_, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{event("e0", "c-0", 1, `{"v":1}`)})
		first <- err
	}()
	pollFor(t, 10*time.Second, "the first group to be writing", s.Committing)

	// Queued behind the first group: given up before any group takes it.
	queuedCtx, giveUpQueued := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() {
		_, err := s.Ingest(queuedCtx, delivery(p), p, []domain.Event{event("e1", "c-1", 1, `{"v":1}`)})
		queued <- err
	}()
	pollFor(t, 10*time.Second, "the delivery to queue", func() bool { return s.Queued(p.TenantID) == 1 })
	giveUpQueued()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("the sender that gave up in the queue got %v, want its own cancellation", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	// Taken into a group of its own, given up while that group writes.
	writingCtx, giveUpWriting := context.WithCancel(context.Background())
	writing := make(chan []domain.Result, 1)
	go func() {
		results, err := s.Ingest(writingCtx, delivery(p), p, []domain.Event{event("e2", "c-2", 1, `{"v":1}`)})
		if err != nil {
			t.Errorf("the sender that gave up while its group wrote got %v, want the group's answer", err)
		}
		writing <- results
	}()
	pollFor(t, 10*time.Second, "its group to be writing", func() bool {
		var n int
		err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%pg_sleep(0.4)%' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})
	giveUpWriting()
	if results := <-writing; len(results) != 1 || results[0].Outcome != domain.Applied {
		t.Errorf("the sender that gave up while its group wrote got %+v, want applied", results)
	}
	if rev, _, n := record(t, s, p, "c-2"); rev != 1 || n != 1 {
		t.Errorf("c-2 at revision %d applied %d times, want the group's write", rev, n)
	}
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM records WHERE tenant_id = $1 AND object_id = 'c-1'`,
		p.TenantID).Scan(&n); err != nil || n != 0 {
		t.Errorf("the delivery given up in the queue wrote %d records (%v)", n, err)
	}
}
