package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// feed reads every change of the tenant after a position, in pages of limit.
func feed(t *testing.T, s *postgres.Store, tenantID, after int64, limit int) []stream.Change {
	t.Helper()
	var all []stream.Change
	for {
		page, err := changefeed.New(postgres.Pools{Write: s.Pool()}).Changes(context.Background(), tenantID, stream.ChangeQuery{After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Position
	}
}

// TestChangesOnlyForAcceptedEvents: applied snapshots and property changes
// and HubSpot deletions are changes, with the previous revision and the
// fields that differ; stale, duplicate, redundant, conflicting, unversioned
// and rejected events are not.
func TestChangesOnlyForAcceptedEvents(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c1", 1, `{"name":"Ann","city":"Oslo"}`)), domain.Applied)
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c1", 3, `{"name":"Ann","city":"Rome"}`)), domain.Applied)
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c1", 3, `{"name":"Ann","city":"Rome"}`)), domain.Duplicate)
	wantOutcome(t, ingestOne(t, s, p, event("e3", "c1", 2, `{"name":"Old"}`)), domain.Stale)
	wantOutcome(t, ingestOne(t, s, p, event("e4", "c1", 3, `{"name":"Ann","city":"Rome"}`)), domain.Redundant)
	wantOutcome(t, ingestOne(t, s, p, event("e5", "c1", 3, `{"name":"Bob"}`)), domain.RevisionConflict)
	wantOutcome(t, ingestOne(t, s, p, event("e6", "c1", -1, `{"name":"X"}`)), domain.Unversioned)
	wantOutcome(t, ingestOne(t, s, p, change("h1", "city", "Paris", 5)), domain.Applied)
	wantOutcome(t, ingestOne(t, s, p, change("h2", domain.PropertyDeleted, "", 6)), domain.Applied)

	got := feed(t, s, p.TenantID, 0, 100)
	type row struct {
		pos      int64
		typ      stream.ChangeType
		rev      int64
		prev     string
		changed  string
		event    string
		snapshot string
	}
	var rows []row
	for _, c := range got {
		prev := "null"
		if c.PreviousRevision != nil {
			prev = fmt.Sprint(*c.PreviousRevision)
		}
		rows = append(rows, row{c.Position, c.Type, *c.Revision, prev, fmt.Sprint(c.Changed), c.EventID, string(c.Snapshot)})
	}
	want := []row{
		{1, stream.ChangeApplied, 1, "null", "[city name]", "e1", `{"city": "Oslo", "name": "Ann"}`},
		{2, stream.ChangeApplied, 3, "1", "[city]", "e2", `{"city": "Rome", "name": "Ann"}`},
		{3, stream.ChangeApplied, 5, "null", "[city]", "h1", `{"city": "Paris"}`}, // contact c-1's first
	}
	if len(rows) != 4 || !slices.Equal(rows[:3], want) {
		t.Fatalf("changes:\n%v\nwant the three applied, then the deletion:\n%v", rows, want)
	}
	if d := rows[3]; d.typ != stream.ChangeDeleted || d.rev != 6 || d.prev != "5" || d.event != "h2" {
		t.Fatalf("deletion change %+v", d)
	}
	for _, c := range got {
		if c.Provider != "crm" || c.ObjectType != "contact" || c.ObjectID == "" || c.DeliveryID == "" || c.CommittedAt.IsZero() {
			t.Fatalf("change %d lacks its names: %+v", c.Position, c)
		}
	}
}

// TestChangesOfOneGroupInArrivalOrder: a group of deliveries that changes
// one record several times gives one change per application, in arrival
// order, each naming the one before it.
func TestChangesOfOneGroupInArrivalOrder(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	var jobs []*ingest.Job
	for i, rev := range []int64{1, 3, 2, 4} { // 2 is stale after 3
		jobs = append(jobs, newJob(t, s, p, event(fmt.Sprint("g", i), "c1", rev, fmt.Sprintf(`{"rev":%d}`, rev))))
	}
	for _, err := range s.CommitGroup(jobs...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var revs, prevs []int64
	for _, c := range feed(t, s, p.TenantID, 0, 10) {
		revs = append(revs, *c.Revision)
		prev := int64(0)
		if c.PreviousRevision != nil {
			prev = *c.PreviousRevision
		}
		prevs = append(prevs, prev)
	}
	if !slices.Equal(revs, []int64{1, 3, 4}) || !slices.Equal(prevs, []int64{0, 1, 3}) {
		t.Fatalf("revisions %v previous %v, want [1 3 4] after [none 1 3]", revs, prevs)
	}
}

// TestFeedNeverSkipsALateCommit: a transaction that took its positions
// and has not committed hides them, and every later transaction of the
// tenant waits for it (on the head row), so a consumer following the tail
// never passes a position that commits afterwards. When it rolls back, the
// next transaction takes the same positions: the feed has no holes.
func TestFeedNeverSkipsALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.NewURL(t)
	a, b := nodeStore(t, url), nodeStore(t, url)
	// a's group waits on the test's lock as long as the test holds it,
	// not just as long as a lane lets it (TestTenantWaitingOnALockHoldsNoLaneMate).
	a.SetLaneLockWait(0)
	p := newProvider(t, a, "acme", "crm")
	ingestOne(t, a, p, event("first", "c0", 1, `{"n":0}`))

	for _, abort := range []bool{false, true} {
		// a's transaction waits, after its changes statement, for a lock
		// the test holds; then it commits, or fails and is rolled back.
		hold, err := a.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Released on failure too: the pools' cleanup waits for it.
		released := false
		t.Cleanup(func() {
			if !released {
				hold.Release()
			}
		})
		if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock(27)`); err != nil {
			t.Fatal(err)
		}
		end := `SELECT pg_advisory_xact_lock_shared(27)`
		if abort {
			// random() keeps the division from being folded, and failing,
			// before the lock is waited for.
			end = `SELECT CASE WHEN pg_advisory_xact_lock_shared(27) IS NULL THEN 0 ELSE 1 / (random() * 0)::int END`
		}
		a.SetBeforeCommit(end)
		tag := fmt.Sprint(abort)
		late := ingestAsync(ctx, a, p, event("late-"+tag, "c1-"+tag, 1, `{"n":1}`))
		pollFor(t, raceTimeout, "a's transaction to wait on the test's lock", func() bool {
			return waiting(t, b, "advisory")
		})
		before := feed(t, b, p.TenantID, 0, 1000)
		early := ingestAsync(ctx, b, p, event("early-"+tag, "c2-"+tag, 1, `{"n":2}`))
		pollFor(t, raceTimeout, "b's transaction to wait for a's on the head row", func() bool {
			return waiting(t, b, "transactionid")
		})
		if got := feed(t, b, p.TenantID, 0, 1000); len(got) != len(before) {
			t.Fatalf("the feed showed %d changes while an earlier transaction was open, want %d", len(got), len(before))
		}
		if _, err := hold.Exec(ctx, `SELECT pg_advisory_unlock(27)`); err != nil {
			t.Fatal(err)
		}
		hold.Release()
		released = true
		a.SetBeforeCommit("")
		lateReply, earlyReply := await(t, late, "a's delivery"), await(t, early, "b's delivery")
		if earlyReply.err != nil || (lateReply.err != nil) != abort {
			t.Fatalf("abort=%v: a's error %v, b's %v", abort, lateReply.err, earlyReply.err)
		}
		got := feed(t, b, p.TenantID, 0, 1000)
		for i, c := range got {
			if c.Position != int64(i+1) {
				t.Fatalf("abort=%v: positions %v have a hole", abort, positions(got))
			}
		}
		var events []string
		for _, c := range got[len(before):] {
			events = append(events, c.EventID)
		}
		want := []string{"late-" + tag, "early-" + tag}
		if abort {
			want = want[1:]
		}
		if !slices.Equal(events, want) {
			t.Fatalf("abort=%v: new changes %v, want %v", abort, events, want)
		}
	}
}

// waiting reports whether some backend waits on a lock of this kind.
func waiting(t *testing.T, s *postgres.Store, locktype string) bool {
	t.Helper()
	n, err := testdb.LockWaits(context.Background(), s.Pool(), locktype)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func positions(cs []stream.Change) []int64 {
	var ps []int64
	for _, c := range cs {
		ps = append(ps, c.Position)
	}
	return ps
}

// TestFeedUnderConcurrentNodes: two stores (two nodes) ingest concurrent
// deliveries of overlapping records while a consumer follows the tail in
// pages of random sizes. It sees each change once, each record's changes in
// increasing revision order, exactly one change per applied event, and the
// same sequence as pages of 1 and of 1,000 read afterwards.
func TestFeedUnderConcurrentNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.NewURL(t)
	nodes := []*postgres.Store{nodeStore(t, url), nodeStore(t, url)}
	p := newProvider(t, nodes[0], "acme", "crm")
	const senders, perSender, records = 8, 40, 12

	var applied sync.Map // event id -> true
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%2]
			for i := range perSender {
				rev := int64(rand.IntN(60) + 1)
				id := fmt.Sprintf("s%d-%d", w, i)
				e := event(id, fmt.Sprint("c", rand.IntN(records)), rev, fmt.Sprintf(`{"rev":%d,"by":%q}`, rev, id))
				rs, err := s.Ingest(ctx, delivery(p), p, []domain.Event{e})
				if err != nil {
					t.Error(err)
					return
				}
				if rs[0].Outcome == domain.Applied {
					applied.Store(id, true)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	var followed []stream.Change
	var after int64
	reader := changefeed.New(postgres.Pools{Write: nodes[1].Pool()})
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		page, err := reader.Changes(ctx, p.TenantID, stream.ChangeQuery{After: after, Limit: 1 + rand.IntN(7)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 0 {
			followed = append(followed, page...)
			after = page[len(page)-1].Position
			continue
		}
		if finished {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if t.Failed() {
		return
	}

	seen := map[string]bool{}
	last := map[string]int64{}
	for i, c := range followed {
		if c.Position != int64(i+1) {
			t.Fatalf("change %d has position %d: the tail skipped or repeated one", i+1, c.Position)
		}
		if seen[c.EventID] {
			t.Fatalf("event %s appears twice", c.EventID)
		}
		seen[c.EventID] = true
		if _, ok := applied.Load(c.EventID); !ok {
			t.Fatalf("event %s is in the feed but was not applied", c.EventID)
		}
		if *c.Revision <= last[c.ObjectID] {
			t.Fatalf("record %s: revision %d after %d", c.ObjectID, *c.Revision, last[c.ObjectID])
		}
		last[c.ObjectID] = *c.Revision
	}
	n := 0
	applied.Range(func(k, _ any) bool {
		n++
		if !seen[k.(string)] {
			t.Errorf("applied event %s is missing from the feed", k)
		}
		return true
	})
	if n != len(followed) || n < records {
		t.Fatalf("%d applied events, %d changes followed", n, len(followed))
	}
	ones, thousands := feed(t, nodes[0], p.TenantID, 0, 1), feed(t, nodes[0], p.TenantID, 0, 1000)
	a, _ := json.Marshal(ones)
	b, _ := json.Marshal(thousands)
	c, _ := json.Marshal(followed)
	if string(a) != string(b) || string(a) != string(c) {
		t.Fatal("pages of 1, pages of 1,000 and the followed tail differ")
	}
}
