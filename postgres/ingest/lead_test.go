package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
)

func TestLeadSignupOutcomes(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s1", " Ada@Example.com ", "launch")), "applied")
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s1", "ada@example.com", "launch")), "duplicate")
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s2", "ada@example.com", "launch")), "redundant")
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s3", "ada@example.com", "webinar-2")), "applied")
	// A colleague joins the same account; a free-mail address gets none.
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s4", "bob@example.com", "launch")), "applied")
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s5", "carol@gmail.com", "launch")), "applied")
	if people, accounts, tasks, members := leadCounts(t, s, p.TenantID); people != 3 || accounts != 1 || tasks != 3 || members != 4 {
		t.Fatalf("%d people, %d accounts, %d tasks, %d memberships; want 3, 1, 3, 4", people, accounts, tasks, members)
	}
}

// raceSignups delivers the events concurrently, released by one barrier,
// each in its own delivery on its own connection.
func raceSignups(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, events []domain.Event) []domain.Outcome {
	t.Helper()
	st := raceStore(t, racePool(t, s, "tidemark-lead-race", int32(len(events))))
	outcomes := make([]domain.Outcome, len(events))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, e := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rs, err := st.Ingest(context.Background(), delivery(p), p, []domain.Event{e})
			if err != nil {
				t.Errorf("signup %d: %v", i, err)
				return
			}
			outcomes[i] = rs[0].Outcome
		}()
	}
	close(start)
	wg.Wait()
	return outcomes
}

func TestConcurrentSignupsOfOnePersonCreateOneOfEach(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	p = knownScopeNamed(t, s, p, domain.ScopeName{ObjectType: "lead", Action: "signup"})
	var events []domain.Event
	for i := range raceN {
		events = append(events, signup(t, fmt.Sprintf("s%d", i), "ada@example.com", "launch"))
	}
	outcomes := raceSignups(t, s, p, events)
	applied := 0
	for _, o := range outcomes {
		switch o {
		case "applied":
			applied++
		case "redundant":
		default:
			t.Errorf("outcome %s, want applied or redundant", o)
		}
	}
	if applied != 1 {
		t.Errorf("%d signups applied, want exactly 1", applied)
	}
	if people, accounts, tasks, members := leadCounts(t, s, p.TenantID); people != 1 || accounts != 1 || tasks != 1 || members != 1 {
		t.Fatalf("%d people, %d accounts, %d tasks, %d memberships; want one of each", people, accounts, tasks, members)
	}
}

func TestConcurrentSignupsOfOneDomainShareOneAccount(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	p = knownScopeNamed(t, s, p, domain.ScopeName{ObjectType: "lead", Action: "signup"})
	var events []domain.Event
	for i := range raceN {
		events = append(events, signup(t, fmt.Sprintf("s%d", i), fmt.Sprintf("person%d@example.com", i%4), "launch"))
	}
	raceSignups(t, s, p, events)
	if people, accounts, tasks, members := leadCounts(t, s, p.TenantID); people != 4 || accounts != 1 || tasks != 4 || members != 4 {
		t.Fatalf("%d people, %d accounts, %d tasks, %d memberships; want 4, 1, 4, 4", people, accounts, tasks, members)
	}
	var unlinked int
	s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM people WHERE tenant_id = $1 AND account_id IS NULL`, p.TenantID).Scan(&unlinked)
	if unlinked != 0 {
		t.Fatalf("%d people not linked to the account", unlinked)
	}
}

func TestSignupFailureRollsBackEverything(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	s.SetBeforeCommit("DO $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$")
	if _, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{signup(t, "s1", "ada@example.com", "launch")}); err == nil {
		t.Fatal("ingest succeeded despite the injected failure")
	}
	if people, accounts, tasks, members := leadCounts(t, s, p.TenantID); people+accounts+tasks+members != 0 {
		t.Fatalf("after a failed signup: %d people, %d accounts, %d tasks, %d memberships", people, accounts, tasks, members)
	}
	s.SetBeforeCommit("")
	wantOutcome(t, ingestOne(t, s, p, signup(t, "s1", "ada@example.com", "launch")), "applied")
}

// TestSignupWaitsOnTheIdentityLock holds a person's advisory lock and sees
// the signup wait for it in pg_locks, then finish once it is released.
func TestSignupWaitsOnTheIdentityLock(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	e := signup(t, "s1", "ada@example.com", "launch")
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	holder, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	personKey := domain.LeadLockKeys(p.TenantID, domain.Lead{Email: e.Lead.Email})[0]
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", personKey); err != nil {
		t.Fatal(err)
	}
	done := ingestAsync(ctx, raceStore(t, racePool(t, s, "tidemark-lead-wait", 1)), p, e)
	for waiting := false; !waiting; {
		select {
		case r := <-done:
			t.Fatalf("signup finished while its identity lock was held: %+v %v", r.result, r.err)
		case <-ctx.Done():
			t.Fatal("the signup was never seen waiting on its advisory lock")
		default:
		}
		err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE a.application_name = 'tidemark-lead-wait' AND l.locktype = 'advisory' AND NOT l.granted)`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not an assertion
	}
	holder.Exec(ctx, "SELECT pg_advisory_unlock($1)", personKey)
	r := await(t, done, "the signup")
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantOutcome(t, r.result, "applied")
}
