package cdc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
)

// TestGapsAndOverflowsAreRepaired: a gap event's records and an overflow
// event's transaction, which the events themselves do not carry, are read
// again through the REST API (the fake org holds them) and applied, of an
// entity the provider had received before and of one it had not; each
// repair is counted on the stream ("Gap Events", "Overflow Events" of the
// Change Data Capture Developer Guide).
func TestGapsAndOverflowsAreRepaired(t *testing.T) {
	t.Parallel()
	f := setup(t)
	run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 1)
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0,
		Fields: map[string]any{"Name.LastName": "King", "Email": "ada@example.com"}}), "a create")
	f.sf.Put("Contact", "003A", t0.Add(time.Second), map[string]any{"LastName": "King", "Email": "countess@example.com"})
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "GAP_UPDATE", RecordIDs: []string{"003A"},
		Commit: t0.Add(time.Second)}), "a gap")
	if snap, _ := f.record(t, "contact", "003A"); !strings.Contains(snap, "countess@example.com") {
		t.Fatalf("after the gap: %s, want the record read again", snap)
	}
	f.sf.Put("Contact", "003O", t0.Add(2*time.Second), map[string]any{"LastName": "Overflow", "Email": "o@example.com"})
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "GAP_OVERFLOW", Commit: t0.Add(2 * time.Second)}),
		"an overflow")
	if snap, _ := f.record(t, "contact", "003O"); !strings.Contains(snap, "Overflow") {
		t.Fatalf("after the overflow: %q, want the transaction's record", snap)
	}
	f.sf.Put("Invoice__c", "a01G", t0.Add(3*time.Second), map[string]any{"Name": "INV-9"})
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Invoice__c", Type: "GAP_CREATE", RecordIDs: []string{"a01G"},
		Commit: t0.Add(3 * time.Second)}), "a gap of a new entity")
	if snap, _ := f.record(t, "invoice__c", "a01G"); !strings.Contains(snap, "a01G") {
		t.Fatalf("after the gap of a new entity: %q, want its record", snap)
	}
	if st := f.stream(t); st.GapsRepaired != 2 || st.Overflows != 1 || st.Events != 4 || st.LastError != "" {
		t.Fatalf("stream: %d gaps, %d overflows, %d events, error %q; want 2, 1, 4, none", st.GapsRepaired, st.Overflows, st.Events, st.LastError)
	}
}

// TestRefusedReplayIDIsRecovered: a stream whose replay id Salesforce no
// longer knows (stopped past retention; the guide's "Handle Errors":
// replayid.corrupted) clears it, counted and audited, subscribes from the
// newest event and backfills since its last event's commit, then goes on.
func TestRefusedReplayIDIsRecovered(t *testing.T) {
	t.Parallel()
	f := setup(t)
	stop := run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 1)
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0,
		Fields: map[string]any{"Name.LastName": "King", "Email": "ada@example.com"}}), "a create")
	stop()
	// While no node read it, 72 hours went by.
	missed := f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: t0.Add(time.Hour),
		Fields: map[string]any{"Email": "while-down@example.com"}})
	f.sf.Put("Contact", "003A", t0.Add(time.Hour), map[string]any{"LastName": "King", "Email": "while-down@example.com"})
	f.pubsub.Expire(missed)

	run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 3) // refused, then from the newest
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if snap, _ := f.record(t, "contact", "003A"); strings.Contains(snap, "while-down@example.com") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change made while down was not backfilled within 30 s (last error %q)", f.stream(t).LastError)
		}
	}
	next := f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: t0.Add(2 * time.Hour),
		Fields: map[string]any{"Title": "Countess"}})
	f.awaitReplay(t, next, "an event after the recovery")
	if st := f.stream(t); st.CorruptedReplays != 1 {
		t.Fatalf("%d refused replay ids counted, want 1", st.CorruptedReplays)
	}
	var audited int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'cdc_replay_reset'
		AND summary LIKE '%backfilling since%'`, f.p.TenantID).Scan(&audited); err != nil || audited != 1 {
		t.Fatalf("%d cdc_replay_reset entries saying what was backfilled (%v), want 1", audited, err)
	}
}
