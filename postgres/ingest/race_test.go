package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// knownScope makes sure the contact.snapshot scope exists and reloads the
// endpoint, so that ingest does not queue ensureScopeSQL. Without it the
// first transaction's scope insert makes every concurrent one wait for its
// commit, which serializes the very race under test.
func knownScope(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint) domain.ProviderEndpoint {
	t.Helper()
	return knownScopeNamed(t, s, p, domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
}

// knownScopeNamed makes sure the scope exists and reloads the endpoint.
func knownScopeNamed(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, name domain.ScopeName) domain.ProviderEndpoint {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO scopes (tenant_id, provider_id, object_type, action) VALUES ($1, $2, $3, $4)
		ON CONFLICT DO NOTHING`, p.TenantID, p.ID, name.ObjectType, name.Action); err != nil {
		t.Fatal(err)
	}
	p, err := s.Endpoint(ctx, p.TenantSlug, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Scopes[name]; !ok {
		t.Fatalf("%s scope not loaded", name)
	}
	return p
}

func TestLowerRevisionWaitsForHigherThenIsStale(t *testing.T) {
	t.Parallel()
	testdb.SkipOnCitus(t, "it reads pg_blocking_pids of the coordinator's backends, and on Citus the row lock is waited for on the worker")
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e10", "c-1", 10, `{"title":"Analyst"}`)), "applied")
	p = knownScope(t, s, p)

	// A and B each get their own pool, tagged so their backends can be told
	// apart. Only A ends its transaction by waiting for an advisory lock
	// that this test holds, so A stays open after its upsert, before COMMIT.
	a := raceStore(t, racePool(t, s, "tidemark-race-A", 1))
	b := raceStore(t, racePool(t, s, "tidemark-race-B", 1))
	const holdKey = 4242
	a.SetBeforeCommit(fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", holdKey))
	// A's and B's groups wait as long as the test holds its lock, not
	// just as long as a lane lets them (TestTenantWaitingOnALockHoldsNoLaneMate).
	a.SetLaneLockWait(0)
	b.SetLaneLockWait(0)
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	holder, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", holdKey); err != nil {
		t.Fatal(err)
	}
	var releaseOnce sync.Once
	unblock := func() {
		releaseOnce.Do(func() {
			holder.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", holdKey)
			holder.Release()
		})
	}
	// Registered after the pools, so it runs before they close: a failing
	// test must not leave A's connection held forever.
	t.Cleanup(unblock)

	aDone := ingestAsync(ctx, a, p, event("e12", "c-1", 12, `{"title":"Director"}`))
	for reached := false; !reached; {
		select {
		case r := <-aDone:
			t.Fatalf("A returned before reaching its commit: %+v, %v", r.result, r.err)
		case <-ctx.Done():
			t.Fatal("A never reached its commit")
		default:
		}
		err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE a.application_name = 'tidemark-race-A' AND l.locktype = 'advisory' AND NOT l.granted)`).Scan(&reached)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not an assertion
	}

	// A has upserted revision 12 and holds the record's row; B's lower
	// revision must queue behind it.
	bDone := ingestAsync(ctx, b, p, event("e11", "c-1", 11, `{"title":"Manager"}`))

	var (
		aPID, bPID        int32
		waitEvent         string
		lockType, mode    string
		blockers          []int32
		lastWaitEventType *string
	)
	for {
		select {
		case r := <-bDone:
			t.Fatalf("B finished while A was still open: %+v, %v", r.result, r.err)
		case <-ctx.Done():
			t.Fatalf("B was never seen waiting on a lock (last wait_event_type %q, wait_event %q)", deref(lastWaitEventType), waitEvent)
		default:
		}
		// pids come from pg_stat_activity by application_name (each pool has
		// one connection); A waits for the test's advisory lock before COMMIT.
		var found bool
		err := s.Pool().QueryRow(ctx, `
			WITH a AS (SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tidemark-race-A'),
			     b AS (SELECT pid, wait_event_type, wait_event FROM pg_stat_activity
			           WHERE datname = current_database() AND application_name = 'tidemark-race-B')
			SELECT (SELECT pid FROM a), b.pid, b.wait_event_type, coalesce(b.wait_event, ''),
			       coalesce(l.locktype, ''), coalesce(l.mode, ''), pg_blocking_pids(b.pid), l.pid IS NOT NULL
			FROM b LEFT JOIN pg_locks l ON l.pid = b.pid AND NOT l.granted`).
			Scan(&aPID, &bPID, &lastWaitEventType, &waitEvent, &lockType, &mode, &blockers, &found)
		if err != nil {
			t.Fatalf("poll pg_stat_activity: %v", err)
		}
		if found && lastWaitEventType != nil && *lastWaitEventType == "Lock" {
			break
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not an assertion
	}
	if aPID == 0 || bPID == 0 || aPID == bPID {
		t.Fatalf("backend pids A=%d B=%d", aPID, bPID)
	}
	if !slices.Contains(blockers, aPID) {
		t.Fatalf("pg_blocking_pids(B=%d) = %v, want it to contain A=%d", bPID, blockers, aPID)
	}
	var aState string
	if err := s.Pool().QueryRow(ctx, `SELECT state FROM pg_stat_activity WHERE pid = $1`, aPID).Scan(&aState); err != nil {
		t.Fatal(err)
	}
	if aState != "active" {
		t.Fatalf("A (pid %d) is %q, want active (waiting to commit)", aPID, aState)
	}
	t.Logf("B (pid %d) waits: wait_event_type=Lock wait_event=%s, ungranted pg_locks row locktype=%s mode=%s; pg_blocking_pids=%v; A (pid %d) %s",
		bPID, waitEvent, lockType, mode, blockers, aPID, aState)

	select {
	case r := <-bDone:
		t.Fatalf("B finished while A was still open: %+v, %v", r.result, r.err)
	default:
	}
	unblock()
	ra := await(t, aDone, "A")
	if ra.err != nil {
		t.Fatalf("A: %v", ra.err)
	}
	wantOutcome(t, ra.result, "applied")
	rb := await(t, bDone, "B")
	if rb.err != nil {
		t.Fatalf("B: %v", rb.err)
	}
	wantOutcome(t, rb.result, "stale")
	if rb.result.CurrentRevision == nil || *rb.result.CurrentRevision != 12 {
		t.Fatalf("B current revision %v, want 12", rb.result.CurrentRevision)
	}
	if rev, snap, count := record(t, s, p, "c-1"); rev != 12 || snap != `{"title": "Director"}` || count != 2 {
		t.Fatalf("record at %d %s count %d, want 12 Director count 2", rev, snap, count)
	}
}

const raceN = 16

// raceIngest ingests events[i] concurrently, each in its own delivery and
// transaction on a pool with one connection per goroutine. All goroutines
// are parked on one barrier before it opens.
func raceIngest(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, events []domain.Event) []domain.Result {
	t.Helper()
	st := raceStore(t, racePool(t, s, "tidemark-race", int32(len(events))))
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	results := make([]domain.Result, len(events))
	errs := make([]error, len(events))
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i, e := range events {
		ready.Add(1)
		done.Add(1)
		d := delivery(p)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			rs, err := st.Ingest(ctx, d, p, []domain.Event{e})
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = rs[0]
		}()
	}
	ready.Wait()
	close(start)
	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	await(t, finished, "the concurrent ingests")
	for i, err := range errs {
		if err != nil {
			t.Fatalf("ingest %s: %v", events[i].EventID, err)
		}
	}
	return results
}

// tally counts outcomes.
func tally(results []domain.Result) map[domain.Outcome]int {
	m := map[domain.Outcome]int{}
	for _, r := range results {
		m[r.Outcome]++
	}
	return m
}

// Both tests run twice: with the scope already known, so the transactions
// race on the idempotency key and the record; and with it unknown, so every
// transaction also inserts the scope and the first one to do so holds the
// others back until its commit.
var scopeModes = []struct {
	name  string
	known bool
}{{"known-scope", true}, {"new-scope", false}}

func TestConcurrentCopiesOfOneEventApplyOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range scopeModes {
		t.Run(mode.name, func(t *testing.T) {
			s, p := setup(t)
			if mode.known {
				p = knownScope(t, s, p)
			}
			events := make([]domain.Event, raceN)
			for i := range events {
				events[i] = event("e1", "c-1", 7, `{"title":"Director","phone":"555"}`)
			}
			results := raceIngest(t, s, p, events)

			got := tally(results)
			if got[domain.Applied] != 1 || got[domain.Duplicate] != raceN-1 {
				t.Fatalf("outcomes %v, want 1 applied and %d duplicate", got, raceN-1)
			}
			if rev, snap, count := record(t, s, p, "c-1"); rev != 7 || snap != `{"phone": "555", "title": "Director"}` || count != 1 {
				t.Fatalf("record at %d %s count %d, want 7 Director count 1", rev, snap, count)
			}
			if n := tableCount(t, s, p, "idempotency_keys"); n != 1 {
				t.Fatalf("idempotency_keys holds %d rows, want 1", n)
			}
			if n := tableCount(t, s, p, "events"); n != raceN {
				t.Fatalf("events holds %d rows, want %d", n, raceN)
			}
			if n := tableCount(t, s, p, "accepted_revisions"); n != 1 {
				t.Fatalf("accepted_revisions holds %d rows, want 1", n)
			}
			if c := counters(t, s, p); fmt.Sprint(c) != fmt.Sprint(got) {
				t.Fatalf("outcome_counters %v, want %v", c, got)
			}
		})
	}
}

func TestConcurrentRevisionsEndAtHighest(t *testing.T) {
	t.Parallel()
	for _, mode := range scopeModes {
		t.Run(mode.name, func(t *testing.T) {
			s, p := setup(t)
			if mode.known {
				p = knownScope(t, s, p)
			}
			snapshot := func(rev int) string { return fmt.Sprintf(`{"rev": %d, "title": "T%d"}`, rev, rev) }
			perm := rand.Perm(raceN)
			events := make([]domain.Event, raceN)
			for i, r := range perm {
				rev := r + 1
				events[i] = event(fmt.Sprintf("e%d", rev), "c-1", int64(rev), snapshot(rev))
			}
			t.Logf("revision order %v (+1)", perm)
			results := raceIngest(t, s, p, events)

			got := tally(results)
			applied := got[domain.Applied]
			if applied+got[domain.Stale] != raceN {
				t.Fatalf("outcomes %v, want only applied and stale", got)
			}
			for _, r := range results {
				if r.Outcome == domain.Applied && (r.CurrentRevision == nil || *r.CurrentRevision != *r.Revision) {
					t.Errorf("applied %s: current revision %v, want its own %d", r.EventID, r.CurrentRevision, *r.Revision)
				}
				if r.Outcome == domain.Stale && (r.CurrentRevision == nil || *r.CurrentRevision <= *r.Revision) {
					t.Errorf("stale %s at %d: current revision %v, want higher", r.EventID, *r.Revision, r.CurrentRevision)
				}
			}
			for _, r := range results {
				// The highest revision can never be stale.
				if *r.Revision == raceN && r.Outcome != domain.Applied {
					t.Fatalf("revision %d: outcome %s (%s), want applied", raceN, r.Outcome, r.Reason)
				}
			}
			rev, snap, count := record(t, s, p, "c-1")
			if rev != raceN || snap != snapshot(raceN) {
				t.Fatalf("record at %d %s, want %d %s", rev, snap, raceN, snapshot(raceN))
			}
			if count != applied {
				t.Fatalf("application_count %d, but %d events were applied", count, applied)
			}
			if n := tableCount(t, s, p, "accepted_revisions"); n != applied {
				t.Fatalf("accepted_revisions holds %d rows, want %d", n, applied)
			}
			if n := tableCount(t, s, p, "events"); n != raceN {
				t.Fatalf("events holds %d rows, want %d", n, raceN)
			}
			if c := counters(t, s, p); fmt.Sprint(c) != fmt.Sprint(got) {
				t.Fatalf("outcome_counters %v, want %v", c, got)
			}
			var appliedRevs []int64
			if err := s.Pool().QueryRow(context.Background(), `SELECT array_agg(revision ORDER BY id) FROM accepted_revisions
				WHERE tenant_id = $1 AND object_id = 'c-1'`, p.TenantID).Scan(&appliedRevs); err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(appliedRevs) || len(slices.Compact(slices.Clone(appliedRevs))) != len(appliedRevs) {
				t.Fatalf("accepted revisions in order of acceptance %v, want strictly increasing", appliedRevs)
			}
			t.Logf("outcomes %v, accepted revisions %v", got, appliedRevs)
		})
	}
}
