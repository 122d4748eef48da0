package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// holdCommits makes the commit of every transaction that wrote record
// contact wait, at COMMIT, for an advisory lock the returned connection
// holds until release is called: a deferred constraint trigger runs at
// commit time.
func holdCommits(t *testing.T, s *Store, contact string) (release func()) {
	t.Helper()
	ctx := context.Background()
	_, err := s.pool.Exec(ctx, `
CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.object_id = '`+contact+`' THEN
        PERFORM pg_advisory_xact_lock(4242);
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT OR UPDATE ON records
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit();`)
	if err != nil {
		t.Fatal(err)
	}
	holder, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			holder.Exec(ctx, `SELECT pg_advisory_unlock(4242)`)
			holder.Release()
		}
	}
	t.Cleanup(release)
	return release
}

// waitingBackends counts the backends of the store's database that wait
// for a lock: "commit" for holdCommits' advisory lock, "row" for any other.
func waitingBackends(t *testing.T, s *Store) map[string]int {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `
SELECT CASE WHEN wait_event = 'advisory' THEN 'commit' ELSE 'row' END, count(*) FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'Lock' GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	waiting := map[string]int{}
	for rows.Next() {
		var what string
		var n int
		if err := rows.Scan(&what, &n); err != nil {
			t.Fatal(err)
		}
		waiting[what] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return waiting
}

func answered(t *testing.T, job *ingestJob, what string) {
	t.Helper()
	select {
	case err := <-job.done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(raceTimeout):
		t.Fatalf("%s: not answered within %s", what, raceTimeout)
	}
}

func unanswered(t *testing.T, job *ingestJob, what string) {
	t.Helper()
	select {
	case err := <-job.done:
		t.Fatalf("%s answered (%v) before its group committed", what, err)
	default:
	}
}

// TestGroupsThatShareNothingRunTogether: while one group's COMMIT waits,
// the next group runs beside it and commits if it shares nothing with it,
// and is answered first; a group that shares a record does not run any
// statement until that commit, so even an event that takes no lock on the
// record (unversioned) sees the committed revision. No delivery is
// answered before its own group committed.
func TestGroupsThatShareNothingRunTogether(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	release := holdCommits(t, s, "c-held")
	held := newJob(t, s, p, event("e1", "c-held", 2, `{"v":"two"}`))
	apart := newJob(t, s, p, event("e2", "c-apart", 1, `{}`))
	after := newJob(t, s, p, event("e3", "c-held", -1, `{"v":"?"}`), event("e4", "c-held", 1, `{"v":"one"}`))

	started := make(chan int, 1)
	go func() { started <- commitInOrder(s.newCommitter(p.TenantID), [][]*ingestJob{{held}, {apart}, {after}}) }()
	answered(t, apart, "the group sharing nothing")
	unanswered(t, held, "the held group")
	deadline := time.Now().Add(raceTimeout)
	for waitingBackends(t, s)["commit"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the held group's COMMIT is not waiting: %v", waitingBackends(t, s))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if w := waitingBackends(t, s); w["row"] != 0 {
			t.Fatalf("the group sharing c-held ran a statement before the held commit: %v waiting", w)
		}
		unanswered(t, after, "the group sharing c-held")
		unanswered(t, held, "the held group")
	}
	release()
	answered(t, held, "the held group")
	answered(t, after, "the group sharing c-held")
	if besides := <-started; besides != 1 {
		t.Errorf("%d groups started beside a running one, want 1 (the one sharing nothing)", besides)
	}
	wantOutcome(t, held.results[0], domain.Applied)
	wantOutcome(t, apart.results[0], domain.Applied)
	wantOutcome(t, after.results[0], domain.Unversioned)
	if cur := after.results[0].CurrentRevision; cur == nil || *cur != 2 {
		t.Errorf("unversioned event after the held group: current revision %v, want 2", cur)
	}
	wantOutcome(t, after.results[1], domain.Stale)
}
