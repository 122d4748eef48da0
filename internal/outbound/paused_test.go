package outbound_test

import (
	"testing"
	"time"
)

// TestPausedDestinationCountsWhatWaits: changes made while a destination
// is paused count as pending, its lag grows with them, and resuming sends
// every one, in order.
func TestPausedDestinationCountsWhatWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	d := e.httpDestination(t, rc, 8)
	e.run(t, fast())
	e.ingest(t, "c1", 1)
	waitFor(t, 10*time.Second, "the first change delivered", func() bool {
		_, delivered, _ := rc.got()
		return len(delivered) == 1
	})

	if err := e.store.PauseDestination(asCLI, e.p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	for rev := int64(2); rev <= 4; rev++ {
		e.ingest(t, "c1", rev)
	}
	e.ingest(t, "c2", 1)
	time.Sleep(500 * time.Millisecond) // what a sender would take, it would take now
	got, err := e.store.Destination(asCLI, e.p.TenantID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "paused" || got.Pending != 4 || got.Oldest == nil {
		t.Fatalf("paused with 4 changes made since: status %s, pending %d, oldest %v; want 4 pending and a lag",
			got.Status, got.Pending, got.Oldest)
	}
	if _, delivered, _ := rc.got(); len(delivered) != 1 {
		t.Fatalf("a paused destination was sent %d changes", len(delivered)-1)
	}

	if err := e.store.ResumeDestination(asCLI, e.p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the 4 changes sent after resuming", func() bool {
		_, delivered, _ := rc.got()
		return len(delivered) == 5
	})
	_, delivered, _ := rc.got()
	checkOrder(t, delivered, 5)
	waitFor(t, 10*time.Second, "nothing pending", func() bool {
		got, err := e.store.Destination(asCLI, e.p.TenantID, d.ID)
		return err == nil && got.Pending == 0
	})
}
