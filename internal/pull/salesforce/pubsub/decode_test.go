package pubsub_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
)

// roundTrip publishes changes on the fake and reads them back decoded.
func roundTrip(t *testing.T, changes ...pubsubtest.Change) []pubsub.ChangeEvent {
	t.Helper()
	f := setup(t)
	for _, c := range changes {
		f.fake.AddChange(c)
	}
	s := f.subscribe(t, "/data/ChangeEvents", pubsub.Position{Earliest: true}, 0)
	out := make([]pubsub.ChangeEvent, len(changes))
	for i := range out {
		out[i] = next(t, s)
	}
	return out
}

// fields renders a ChangeEvent's fields for comparison: nil as <nil>.
func fields(ev pubsub.ChangeEvent) map[string]string {
	out := map[string]string{}
	for k, v := range ev.Fields {
		out[k] = "<nil>"
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// TestDecodeEachChangeType follows "Event Deserialization Considerations"
// (bitmaps, epoch dates) and "Change Event Body Fields" (what each change
// type carries), for a standard object with compound fields and a custom
// object.
func TestDecodeEachChangeType(t *testing.T) {
	t.Parallel()
	birthday := int32(time.Date(1990, 4, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	later := t0.Add(time.Hour)
	got := roundTrip(t,
		pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0, Fields: map[string]any{
			"Name.FirstName": "Ada", "Name.LastName": "Lovelace", "Email": "ada@example.com", "Birthdate": birthday,
			"HasOptedOutOfEmail": false, "MailingAddress.City": "London", "CreatedDate": t0.UnixMilli()}},
		pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: later, Sequence: 2,
			Fields: map[string]any{"Name.LastName": "King", "Title": "Countess", "LastModifiedDate": later.UnixMilli()},
			Nulled: []string{"Phone", "MailingAddress.City"}, Diff: []string{"Description"}},
		pubsubtest.Change{Entity: "Contact", Type: "DELETE", RecordIDs: []string{"003A"}, Commit: later.Add(time.Minute)},
		pubsubtest.Change{Entity: "Contact", Type: "UNDELETE", RecordIDs: []string{"003A"}, Commit: later.Add(2 * time.Minute),
			Fields: map[string]any{"Name.LastName": "King", "Email": "ada@example.com"}},
		pubsubtest.Change{Entity: "Invoice__c", Type: "CREATE", RecordIDs: []string{"a01B"}, Commit: t0, Fields: map[string]any{
			"Name": "INV-7", "Amount__c": 1250.5, "Status__c": "Open"}},
	)
	for i, tc := range []struct {
		name          string
		typ, entity   string
		changed, null []string
		diff          []string
		fields        map[string]string
	}{
		{name: "create", typ: "CREATE", entity: "Contact", fields: map[string]string{"FirstName": "Ada", "LastName": "Lovelace",
			"Email": "ada@example.com", "Birthdate": "1990-04-01", "HasOptedOutOfEmail": "false", "MailingCity": "London",
			"CreatedDate": "2026-12-07T09:15:30.250Z"}},
		{name: "update", typ: "UPDATE", entity: "Contact",
			changed: []string{"Name.LastName", "MailingAddress.City", "Phone", "Title", "Description", "LastModifiedDate"},
			null:    []string{"Phone", "MailingAddress.City"}, diff: []string{"Description"},
			fields: map[string]string{"LastName": "King", "Title": "Countess", "Phone": "<nil>", "MailingCity": "<nil>",
				"LastModifiedDate": "2026-12-07T10:15:30.250Z"}},
		{name: "delete", typ: "DELETE", entity: "Contact", fields: map[string]string{}},
		{name: "undelete", typ: "UNDELETE", entity: "Contact", fields: map[string]string{"LastName": "King", "Email": "ada@example.com"}},
		{name: "custom object", typ: "CREATE", entity: "Invoice__c", fields: map[string]string{"Name": "INV-7", "Amount__c": "1250.5", "Status__c": "Open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := got[i]
			h := ev.Header
			if h.ChangeType != tc.typ || h.EntityName != tc.entity || !slices.Equal(h.RecordIDs, []string{ev.Header.RecordIDs[0]}) || ev.Gap {
				t.Fatalf("header %+v", h)
			}
			if !sameSet(h.ChangedFields, tc.changed) || !sameSet(h.NulledFields, tc.null) || !sameSet(h.DiffFields, tc.diff) {
				t.Fatalf("changed %v nulled %v diff %v, want %v %v %v", h.ChangedFields, h.NulledFields, h.DiffFields, tc.changed, tc.null, tc.diff)
			}
			if f := fields(ev); !maps.Equal(f, tc.fields) {
				t.Fatalf("fields %v, want %v", f, tc.fields)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// eventKey is what the ingest compares of an event.
func eventKey(e domain.Event) string {
	rev := "<nil>"
	if e.Revision != nil {
		rev = fmt.Sprint(*e.Revision)
	}
	return fmt.Sprintf("%s %s %s %s %s %s", e.EventID, e.Scope, e.ObjectID, e.Property, rev, e.Snapshot)
}

func keys(events []domain.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = eventKey(e)
	}
	return out
}

// TestEventsOfEachChangeType: what each change becomes for the ingest,
// one record at a time, with ids that make a second reading a duplicate.
func TestEventsOfEachChangeType(t *testing.T) {
	t.Parallel()
	ms := t0.UnixMilli()
	got := roundTrip(t,
		pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0,
			Fields: map[string]any{"Name.LastName": "Lovelace", "Email": "ada@example.com"}},
		pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A", "003B"}, Commit: t0, Sequence: 2,
			Fields: map[string]any{"Title": "CTO"}, Nulled: []string{"Phone"}},
		pubsubtest.Change{Entity: "Invoice__c", Type: "DELETE", RecordIDs: []string{"a01B"}, Commit: t0},
		pubsubtest.Change{Entity: "Invoice__c", Type: "UNDELETE", RecordIDs: []string{"a01B"}, Commit: t0.Add(time.Second),
			Fields: map[string]any{"Name": "INV-7"}},
		pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003C"}, Commit: t0, Diff: []string{"Description"}},
	)
	rev := ms * 1000
	want := [][]string{
		{fmt.Sprintf("cdc:contact:003A:$created:%d:1 contact.creation 003A $created %d {}", ms, rev),
			fmt.Sprintf(`cdc:contact:003A:Id:%d:1 contact.propertyChange 003A Id %d {"Id":"003A"}`, ms, rev),
			fmt.Sprintf(`cdc:contact:003A:Email:%d:1 contact.propertyChange 003A Email %d {"Email":"ada@example.com"}`, ms, rev),
			fmt.Sprintf(`cdc:contact:003A:LastName:%d:1 contact.propertyChange 003A LastName %d {"LastName":"Lovelace"}`, ms, rev)},
		{fmt.Sprintf(`cdc:contact:003A:Phone:%d:2 contact.propertyChange 003A Phone %d {"Phone":null}`, ms, rev),
			fmt.Sprintf(`cdc:contact:003A:Title:%d:2 contact.propertyChange 003A Title %d {"Title":"CTO"}`, ms, rev),
			fmt.Sprintf(`cdc:contact:003B:Phone:%d:2 contact.propertyChange 003B Phone %d {"Phone":null}`, ms, rev),
			fmt.Sprintf(`cdc:contact:003B:Title:%d:2 contact.propertyChange 003B Title %d {"Title":"CTO"}`, ms, rev)},
		{fmt.Sprintf("cdc:invoice__c:a01B:$deleted:%d:1 invoice__c.deletion a01B $deleted %d {}", ms, rev)},
		{fmt.Sprintf(`cdc:invoice__c:a01B:undelete:%d:1 invoice__c.undelete a01B  %d {"Id":"a01B","Name":"INV-7"}`, ms+1000, rev+1_000_000)},
		nil,
	}
	for i, ev := range got {
		events, reread := pubsub.Events(ev)
		if k := keys(events); !slices.Equal(k, want[i]) {
			t.Fatalf("change %d (%s): events\n%s\nwant\n%s", i, ev.Header.ChangeType, k, want[i])
		}
		again, _ := pubsub.Events(ev)
		if !slices.Equal(keys(again), keys(events)) {
			t.Fatalf("change %d read twice gives other events", i)
		}
		for _, e := range events {
			if e.RevisionTime.UnixMilli() != ev.Header.CommitTimestamp || len(e.Payload) == 0 || !json.Valid(e.Payload) {
				t.Fatalf("event %s: revision time %s, payload %s", e.EventID, e.RevisionTime, e.Payload)
			}
		}
		if wantReread := i == 4; wantReread != slices.Equal(reread, []string{"003C"}) {
			t.Fatalf("change %d: reread %v", i, reread)
		}
	}
}

// TestGapAndOverflowAreFlagged follows "Gap Events" and "Overflow Events":
// header only, the records to read again; an overflow has none.
func TestGapAndOverflowAreFlagged(t *testing.T) {
	t.Parallel()
	got := roundTrip(t,
		pubsubtest.Change{Entity: "Contact", Type: "GAP_UPDATE", RecordIDs: []string{"003A", "003B"}, Commit: t0},
		pubsubtest.Change{Entity: "Invoice__c", Type: "GAP_OVERFLOW", RecordIDs: []string{"a01B"}, Commit: t0},
	)
	gap, overflow := got[0], got[1]
	events, reread := pubsub.Events(gap)
	if !gap.Gap || gap.Overflow || len(events) != 0 || !slices.Equal(reread, []string{"003A", "003B"}) {
		t.Fatalf("gap: %+v gives %d events, reread %v", gap, len(events), reread)
	}
	events, reread = pubsub.Events(overflow)
	if !overflow.Gap || !overflow.Overflow || len(events) != 0 || len(reread) != 0 || overflow.Header.EntityName != "Invoice__c" {
		t.Fatalf("overflow: %+v gives %d events, reread %v", overflow, len(events), reread)
	}
}
