package outbound_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func setup(t *testing.T, nd stream.NewDestination) (*postgres.Store, domain.ProviderEndpoint, stream.Destination) {
	t.Helper()
	s, p := pgtest.Setup(t, postgres.New)
	if nd.URL == "" {
		nd.URL = "https://203.0.113.1/hook"
	}
	d, _, err := s.CreateDestination(pgtest.AsCLI(context.Background()), p.TenantID, nd)
	if err != nil {
		t.Fatal(err)
	}
	return s, p, d
}

// lease renews owner's leases and takes every free one with work, as a
// node with room for 64 of any tenant would.
func lease(t *testing.T, s *postgres.Store, owner string, ttl time.Duration) []stream.LeasedDestination {
	t.Helper()
	ctx := context.Background()
	held, err := s.RenewDestinations(ctx, owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := s.TakeDestinations(ctx, owner, ttl, 64-len(held), 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	return append(held, taken...)
}

func positions(due []stream.QueuedChange) []int64 {
	var ps []int64
	for _, c := range due {
		ps = append(ps, c.Position)
	}
	return ps
}

// TestLeaseIsExclusive: one owner at a time holds a destination; another
// takes it once it is released or has run out; a paused one is nobody's;
// the lease comes with the secrets that sign now, two after a rotation.
func TestLeaseIsExclusive(t *testing.T) {
	t.Parallel()
	s, p, d := setup(t, stream.NewDestination{})
	ctx := context.Background()
	pgtest.Ingest(t, s, p, pgtest.Event("e1", "c1", 1, `{}`)) // something to send
	lease := func(owner string, ttl time.Duration) []stream.LeasedDestination {
		t.Helper()
		return lease(t, s, owner, ttl)
	}
	a := lease("a", time.Minute)
	if len(a) != 1 || a[0].ID != d.ID || a[0].TenantSlug != "acme" || len(a[0].Secrets) != 1 || a[0].MaxInFlight != 8 {
		t.Fatalf("a leased %+v", a)
	}
	if b := lease("b", time.Minute); len(b) != 0 {
		t.Fatalf("b leased %+v while a holds it", b)
	}
	if again := lease("a", time.Minute); len(again) != 1 {
		t.Fatalf("a could not renew: %+v", again)
	}
	if err := s.ReleaseDestinations(ctx, "a", a); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if b := lease("b", 500*time.Millisecond); len(b) != 1 {
		t.Fatalf("b could not take a released lease: %+v", b)
	}
	time.Sleep(time.Second)
	if _, err := s.RotateDestinationSecret(pgtest.AsCLI(ctx), p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	if a := lease("a", time.Minute); len(a) != 1 || len(a[0].Secrets) != 2 {
		t.Fatalf("a could not take a lease that ran out, with both secrets of the rotation: %+v", a)
	}
	if err := s.PauseDestination(pgtest.AsCLI(ctx), p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	if a := lease("a", time.Minute); len(a) != 0 {
		t.Fatalf("a renewed the lease of a paused destination: %+v", a)
	}
}

// TestQueueSendsRecordsOneAtATime: the fill takes the selected changes;
// of each record only the first pending change is due, and not while it
// is in flight; a delivered change lets the next through, a failed one
// waits its retry; only the lease holder fills or picks.
func TestQueueSendsRecordsOneAtATime(t *testing.T) {
	t.Parallel()
	s, p, d := setup(t, stream.NewDestination{Types: []string{"record.applied"}})
	ctx := context.Background()
	for rev := int64(1); rev <= 3; rev++ {
		for _, c := range []string{"x", "y"} {
			pgtest.Ingest(t, s, p, pgtest.Event(fmt.Sprint(c, rev), c, rev, `{"a":1}`))
		}
	}
	step := func(owner string, done []stream.AttemptResult, inFlight []int64) []int64 {
		t.Helper()
		stepped, err := s.Step(ctx, owner, p.TenantID, d.ID, done, inFlight, 8)
		failing, due := stepped.Failing, stepped.Due
		if err != nil || failing {
			t.Fatalf("step of %s: failing %v, %v", owner, failing, err)
		}
		for _, c := range due {
			if c.Attempts != 0 || *c.Revision != (c.Position+1)/2 {
				t.Fatalf("due %+v", c)
			}
		}
		return positions(due)
	}
	if due := step("a", nil, nil); len(due) != 0 {
		t.Fatalf("a, without the lease, got %v", due)
	}
	if got, _ := s.Destination(ctx, p.TenantID, d.ID); got.Cursor != 0 || got.Pending != 6 {
		t.Fatalf("filled without the lease, or the 6 changes waiting not counted: %+v", got)
	}
	lease(t, s, "a", time.Minute)
	if due := step("b", nil, nil); len(due) != 0 {
		t.Fatalf("b, without the lease, got %v", due)
	}
	if due := step("a", nil, nil); !slices.Equal(due, []int64{1, 2}) {
		t.Fatalf("due %v, want 1 and 2, the first change of each record", due)
	}
	if due := step("a", nil, []int64{1}); !slices.Equal(due, []int64{2}) {
		t.Fatalf("with 1 in flight, due %v, want 2 alone", due)
	}
	results := []stream.AttemptResult{
		{DestinationAttempt: stream.DestinationAttempt{Position: 1, Status: 200, Duration: time.Millisecond}},
		{DestinationAttempt: stream.DestinationAttempt{Position: 2, Status: 500, Error: "answered 500"}, Retry: time.Hour},
	}
	if due := step("a", results, nil); !slices.Equal(due, []int64{3}) {
		t.Fatalf("due %v, want 3 (x's next), not 2 nor 4 (y waits its retry)", due)
	}
	got, err := s.Destination(ctx, p.TenantID, d.ID)
	if err != nil || got.Pending != 5 || got.LastSuccess == nil || got.Cursor != 6 {
		t.Fatalf("destination %+v (%v), want 5 pending, a success, cursor 6", got, err)
	}
}

// TestFillSelects: a destination receives only its provider's and object
// type's changes, and a fill stops at the bound of the queue.
func TestFillSelects(t *testing.T) {
	t.Parallel()
	s, p, d := setup(t, stream.NewDestination{ObjectType: "deal"})
	ctx := context.Background()
	pgtest.Ingest(t, s, p, pgtest.Event("e1", "c1", 1, `{}`)) // a contact
	lease(t, s, "a", time.Minute)
	if stepped, err := s.Step(ctx, "a", p.TenantID, d.ID, nil, nil, 8); err != nil || len(stepped.Due) != 0 {
		t.Fatalf("due %d (%v), want none", len(stepped.Due), err)
	}
	if got, _ := s.Destination(ctx, p.TenantID, d.ID); got.Pending != 0 || got.Cursor != 1 {
		t.Fatalf("a contact's change was taken by a deal destination: %+v", got)
	}
}

// TestStepTakesAlertEvents: a destination of alert types takes its
// tenant's alert events after its alert cursor, those its types select,
// one at a time in event order and before the changes; another tenant's
// are not its, and a destination of record types takes none.
func TestStepTakesAlertEvents(t *testing.T) {
	t.Parallel()
	s, p, d := setup(t, stream.NewDestination{Types: []string{"alert.resolved", "record.*"}})
	records, _, err := s.CreateDestination(pgtest.AsCLI(context.Background()), p.TenantID, stream.NewDestination{URL: "https://203.0.113.1/r"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	other := pgtest.Provider(t, s, "globex", "crm").TenantID
	a := pgtest.InsertAlertFired(t, s.Pool(), p.TenantID, "refusals", "crm: 20 refused deliveries in 5m0s.")
	pgtest.InsertAlertFired(t, s.Pool(), other, "refusals", "globex's")
	pgtest.InsertAlertResolved(t, s.Pool(), p.TenantID, a)
	b := pgtest.InsertAlertFired(t, s.Pool(), p.TenantID, "dead_letters", "1 dead letter in 1h0m0s.")
	pgtest.InsertAlertResolved(t, s.Pool(), p.TenantID, b)
	pgtest.Ingest(t, s, p, pgtest.Event("e1", "c1", 1, `{}`))
	lease(t, s, "a", time.Minute)

	step := func(id int64, done []stream.AttemptResult, inFlight []int64, limit int) []stream.QueuedChange {
		t.Helper()
		stepped, err := s.Step(ctx, "a", p.TenantID, id, done, inFlight, limit)
		failing, due := stepped.Failing, stepped.Due
		if err != nil || failing {
			t.Fatalf("step: failing %v, %v", failing, err)
		}
		return due
	}
	due := step(d.ID, nil, nil, 8)
	if len(due) != 2 || due[0].Alert == nil || due[1].Alert != nil || due[1].Position != 1 {
		t.Fatalf("due %+v, want the first resolution, then change 1", due)
	}
	ev := due[0].Alert
	if ev.Type != "alert.resolved" || ev.Alert.ID != a || ev.Alert.ResolvedAt == nil || ev.Alert.Value != 0 ||
		ev.Alert.Summary != "crm: 20 refused deliveries in 5m0s." || ev.Alert.Window != 15*time.Minute ||
		!stream.IsAlertQueuePosition(due[0].Position) || due[0].MessageID() != ev.MessageID() {
		t.Fatalf("alert event %+v at %d", ev, due[0].Position)
	}
	if got := step(d.ID, nil, []int64{due[0].Position, 1}, 8); len(got) != 0 {
		t.Fatalf("with both in flight, due %+v; the next alert event waits its turn", got)
	}
	if got := step(d.ID, nil, nil, 1); len(got) != 1 || got[0].Alert == nil {
		t.Fatalf("with room for one, due %+v; want the alert event", got)
	}
	delivered := []stream.AttemptResult{{DestinationAttempt: stream.DestinationAttempt{Position: due[0].Position, Status: 200}}}
	next := step(d.ID, delivered, []int64{1}, 8)
	if len(next) != 1 || next[0].Alert == nil || next[0].Alert.Alert.ID != b || next[0].Alert.Type != "alert.resolved" {
		t.Fatalf("after the first was delivered, due %+v; want b's resolution", next)
	}
	if got, _ := s.Destination(ctx, p.TenantID, d.ID); got.Pending != 2 {
		t.Fatalf("pending %d, want b's resolution and change 1 (the firings are not selected)", got.Pending)
	}

	if due := step(records.ID, nil, nil, 8); len(due) != 1 || due[0].Alert != nil {
		t.Fatalf("a destination of record types got %+v, want the change alone", due)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM destination_queue WHERE position < 0 AND destination_id = `+fmt.Sprint(records.ID)); n != 0 {
		t.Fatalf("%d alert events queued for the record destination", n)
	}
}

// TestTakeInTurnsByTenant: free destinations are taken only when they
// have something to send, each tenant's first before any tenant's second,
// and never more than the share of one tenant; one that has sent all it
// had is given back and taken again only once its feed moves.
func TestTakeInTurnsByTenant(t *testing.T) {
	t.Parallel()
	s, acme := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	globex := pgtest.Provider(t, s, "globex", "crm")
	initech := pgtest.Provider(t, s, "initech", "crm")
	create := func(tenantID int64) stream.Destination {
		t.Helper()
		d, _, err := s.CreateDestination(pgtest.AsCLI(ctx), tenantID, stream.NewDestination{URL: "https://203.0.113.1/hook"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for range 5 {
		create(acme.TenantID)
	}
	g := create(globex.TenantID)
	create(initech.TenantID) // nothing to send: initech's feed is empty
	pgtest.Ingest(t, s, acme, pgtest.Event("e1", "c1", 1, `{}`))
	pgtest.Ingest(t, s, globex, pgtest.Event("e1", "c1", 1, `{}`))

	taken, err := s.TakeDestinations(ctx, "a", time.Minute, 3, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	byTenant := map[int64]int{}
	for _, d := range taken {
		byTenant[d.TenantID]++
	}
	if len(taken) != 3 || byTenant[acme.TenantID] != 2 || byTenant[globex.TenantID] != 1 {
		t.Fatalf("took %+v, want two of acme's (its share) and globex's one, none of initech's", byTenant)
	}
	if more, err := s.TakeDestinations(ctx, "a", time.Minute, 10, 2, byTenant); err != nil || len(more) != 0 {
		t.Fatalf("holding acme's share, took %d more (%v), want none", len(more), err)
	}
	if other, err := s.TakeDestinations(ctx, "b", time.Minute, 10, 2, nil); err != nil || len(other) != 2 {
		t.Fatalf("another node took %d (%v), want acme's next two", len(other), err)
	}

	// globex's destination sends its one change and has nothing more.
	if released, err := s.ReleaseIdle(ctx, "a", globex.TenantID, g.ID); err != nil || released {
		t.Fatalf("gave back a destination with a change to send: %v, %v", released, err)
	}
	stepped, err := s.Step(ctx, "a", globex.TenantID, g.ID, nil, nil, 8)
	due := stepped.Due
	if err != nil || len(due) != 1 {
		t.Fatalf("due %d (%v), want the change", len(due), err)
	}
	delivered := []stream.AttemptResult{{DestinationAttempt: stream.DestinationAttempt{Position: due[0].Position, Status: 200}}}
	if _, err := s.RecordAttempts(ctx, globex.TenantID, g.ID, delivered); err != nil {
		t.Fatal(err)
	}
	if released, err := s.ReleaseIdle(ctx, "a", globex.TenantID, g.ID); err != nil || !released {
		t.Fatalf("kept the lease of a destination with nothing to send: %v, %v", released, err)
	}
	if again, _ := s.TakeDestinations(ctx, "c", time.Minute, 10, 10, nil); slices.ContainsFunc(again, func(d stream.LeasedDestination) bool { return d.TenantID == globex.TenantID }) {
		t.Fatal("took globex's idle destination again before its feed moved")
	}
	pgtest.Ingest(t, s, globex, pgtest.Event("e2", "c1", 2, `{}`))
	if again, _ := s.TakeDestinations(ctx, "c", time.Minute, 10, 10, nil); !slices.ContainsFunc(again, func(d stream.LeasedDestination) bool { return d.TenantID == globex.TenantID }) {
		t.Fatal("globex's destination was not taken once its feed moved")
	}
}
