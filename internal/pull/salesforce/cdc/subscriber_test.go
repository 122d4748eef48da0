package cdc_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
)

var t0 = time.Date(2026, 12, 7, 9, 15, 30, 250_000_000, time.UTC)

// TestSubscriberWritesTheStream: a subscribed stream's creates, updates,
// deletes, undeletes and merged events of contacts and of a custom object
// land as the events of the contract (docs/contract/cdc.md#decoding), each
// change event once, the replay id moving with them; read again from an
// earlier replay id, they are duplicates. The org's delivery allocation is
// read from its limits and kept on the stream.
func TestSubscriberWritesTheStream(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sf.SetDeliveries(12_000, 50_000)
	stop := run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 1)
	first := f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0,
		Fields: map[string]any{"Email": "ada@example.com", "Name.LastName": "King"}})
	f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: t0.Add(time.Second),
		Fields: map[string]any{"Title": "Countess"}, Nulled: []string{"Email"}})
	f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003B"}, Commit: t0.Add(2 * time.Second),
		Fields: map[string]any{"Name.LastName": "Byron"}})
	f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A", "003B"}, Commit: t0.Add(3 * time.Second),
		Fields: map[string]any{"Phone": "555-0100"}})
	f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "DELETE", RecordIDs: []string{"003B"}, Commit: t0.Add(4 * time.Second)})
	f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UNDELETE", RecordIDs: []string{"003B"}, Commit: t0.Add(5 * time.Second),
		Fields: map[string]any{"Name.LastName": "Byron"}})
	last := f.pubsub.AddChange(pubsubtest.Change{Entity: "Invoice__c", Type: "CREATE", RecordIDs: []string{"a01X"}, Commit: t0.Add(6 * time.Second),
		Fields: map[string]any{"Name": "INV-1"}})
	f.awaitReplay(t, last, "after 7 change events")

	snap, rev := f.record(t, "contact", "003A")
	var a map[string]*string
	if err := json.Unmarshal([]byte(snap), &a); err != nil || a["Title"] == nil || *a["Title"] != "Countess" || a["Email"] != nil ||
		a["Phone"] == nil || *a["Phone"] != "555-0100" || a["LastName"] == nil || *a["LastName"] != "King" {
		t.Fatalf("contact 003A: %s, want the created, updated, nulled and merged fields", snap)
	}
	if want := t0.Add(3*time.Second).UnixMilli() * 1000; rev != want {
		t.Errorf("contact 003A at revision %d, want the last commit's microseconds %d", rev, want)
	}
	if snap, _ := f.record(t, "contact", "003B"); snap != `{"Id": "003B", "LastName": "Byron"}` {
		t.Errorf("contact 003B: %s, want the undeleted snapshot", snap)
	}
	if snap, _ := f.record(t, "invoice__c", "a01X"); snap == "" {
		t.Error("the custom object's record is missing")
	}
	st := f.stream(t)
	if st.Events != 7 || st.LastError != "" || !st.Subscribed(time.Now()) {
		t.Errorf("stream: %d events, error %q, subscribed %t; want 7, none, true", st.Events, st.LastError, st.Subscribed(time.Now()))
	}
	if used, ok := st.Allocation.Used(); !ok || st.Allocation.Max != 50_000 || used != 0.24 {
		t.Errorf("allocation %+v (used %v), want 12,000 of 50,000 used", st.Allocation, used)
	}
	applied := f.outcomes(t)["applied"]
	if applied == 0 || f.outcomes(t)["revision_conflict"] != 0 {
		t.Fatalf("outcomes %v", f.outcomes(t))
	}

	// Read again from the first event: every later one is a duplicate.
	stop()
	if _, err := f.store.Pool().Exec(f.ctx, `UPDATE cdc_streams SET replay_id = $1 WHERE tenant_id = $2`, first, f.p.TenantID); err != nil {
		t.Fatal(err)
	}
	run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 2)
	f.awaitReplay(t, last, "read again")
	if got := f.outcomes(t); got["applied"] != applied || got["duplicate"] == 0 {
		t.Fatalf("read again: %v, want no more applied (%d) and duplicates", got, applied)
	}
}

// TestOneSubscriberAcrossNodes: three nodes' subscribers on one database
// never hold the stream's subscription at once (the fake counts open
// subscriptions; the database names one holder); when the holder stops,
// another takes the stream over from its replay id, and every change
// event is written once.
func TestOneSubscriberAcrossNodes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var stops []func()
	holders := map[string]int{}
	for i := range 3 {
		s := f.subscriber(t, 3*time.Second)
		holders[s.Holder] = i
		stops = append(stops, run(t, s))
	}
	f.awaitSubscribed(t, 1)
	time.Sleep(time.Second) // several looks for streams by each node
	publish := func(from, n int) []byte {
		var last []byte
		for i := from; i < from+n; i++ {
			last = f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{fmt.Sprintf("003N%04d", i)},
				Commit: t0.Add(time.Duration(i) * time.Millisecond), Fields: map[string]any{"Name.LastName": fmt.Sprintf("N%d", i)}})
		}
		return last
	}
	f.awaitReplay(t, publish(0, 50), "the first 50")
	holder := f.stream(t).LeasedBy
	first, ok := holders[holder]
	if !ok {
		t.Fatalf("the stream is held by %q, none of the nodes", holder)
	}
	stops[first]()
	last := publish(50, 50)
	f.awaitReplay(t, last, "the next 50, after the holder stopped")
	if next := f.stream(t).LeasedBy; next == holder || next == "" {
		t.Fatalf("after node %d stopped, the stream is held by %q", first, next)
	}
	if c := f.pubsub.Counts(); c.MaxOpen != 1 {
		t.Fatalf("%d subscriptions were open at once, want 1", c.MaxOpen)
	}
	var records, events int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT (SELECT count(*) FROM records WHERE tenant_id = $1),
		(SELECT count(DISTINCT event_id) FILTER (WHERE outcome = 'applied') FROM events WHERE tenant_id = $1)`, f.p.TenantID).
		Scan(&records, &events); err != nil {
		t.Fatal(err)
	}
	if st := f.stream(t); records != 100 || st.Events != 100 {
		t.Fatalf("%d records, %d change events counted, want 100 each", records, st.Events)
	}
	if dup := f.outcomes(t)["duplicate"]; dup != 0 {
		t.Fatalf("%d duplicates: a change event was written twice", dup)
	}
}
