package ingest_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/ingest"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// A Salesforce record is brought by whole snapshots (outbound messages,
// backfill) and by per-field changes (Change Data Capture) of the same
// revisions. The two agree when their values do, and neither lets an
// older value overwrite a newer one (docs/contract/cdc.md).

// TestWholeSnapshotAfterFieldChangesOfItsRevision: a record created field
// by field at revision 100, then the outbound message of that change (a
// snapshot of some of its fields, at 100): redundant when the common
// fields agree, a conflict when one differs.
func TestWholeSnapshotAfterFieldChangesOfItsRevision(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	for _, e := range []domain.Event{change("c0", domain.PropertyCreated, "", 100), change("c1", "Email", "ada@example.com", 100),
		change("c2", "Title", "Countess", 100), change("c3", "OwnerId", "005A", 100)} {
		wantOutcome(t, ingestOne(t, s, p, e), "applied")
	}
	wantOutcome(t, ingestOne(t, s, p, event("om-1", "c-1", 100, `{"Email":"ada@example.com","Title":"Countess"}`)), "redundant")
	wantOutcome(t, ingestOne(t, s, p, event("om-2", "c-1", 100, `{"Email":"ada@example.com","Title":"Duchess"}`)), "revision_conflict")
	if _, snap, _ := record(t, s, p, "c-1"); snap != `{"Email": "ada@example.com", "Title": "Countess", "OwnerId": "005A"}` {
		t.Fatalf("record %s, want the fields as created", snap)
	}
	pgtest.WantViolations(t, pgtest.Reconcile(t, s, 0), "", 0, "")
}

// TestFieldChangesAfterAWholeSnapshot: the outbound message at 200 first,
// then the field changes: of revision 200 redundant when they agree, a
// conflict when not; older ones stale; newer ones, and older ones of a
// field the snapshot did not hold, applied, merged into the snapshot.
func TestFieldChangesAfterAWholeSnapshot(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("om-1", "c-1", 200, `{"Email":"ada@example.com","Title":"Countess"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("c1", "Title", "Countess", 200)), "redundant")
	wantOutcome(t, ingestOne(t, s, p, change("c2", "Email", "old@example.com", 150)), "stale")
	wantOutcome(t, ingestOne(t, s, p, change("c3", "Title", "Duchess", 200)), "revision_conflict")
	wantOutcome(t, ingestOne(t, s, p, change("c4", "Phone", "555", 150)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("c5", "Title", "Queen", 300)), "applied")
	// Once merged, the snapshot's other fields keep their revision.
	wantOutcome(t, ingestOne(t, s, p, change("c6", "Email", "older@example.com", 180)), "stale")
	if rev, snap, _ := record(t, s, p, "c-1"); rev != 300 || snap != `{"Email": "ada@example.com", "Phone": "555", "Title": "Queen"}` {
		t.Fatalf("record %s at %d, want the snapshot with Phone and the newer Title at 300", snap, rev)
	}
	pgtest.WantViolations(t, pgtest.Reconcile(t, s, 0), "", 0, "")
	// A newer whole snapshot is the record again, as before any field change.
	wantOutcome(t, ingestOne(t, s, p, event("om-2", "c-1", 400, `{"Email":"new@example.com","Title":"Queen"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("c7", "Title", "Knave", 350)), "stale")
	if rev, snap, _ := record(t, s, p, "c-1"); rev != 400 || snap != `{"Email": "new@example.com", "Title": "Queen"}` {
		t.Fatalf("record %s at %d, want the snapshot of 400", snap, rev)
	}
	pgtest.WantViolations(t, pgtest.Reconcile(t, s, 0), "", 0, "")
	// Merged again: a deletion then an undelete (a whole snapshot) and a
	// change of a field the snapshot lacks.
	wantOutcome(t, ingestOne(t, s, p, change("d1", domain.PropertyDeleted, "", 500)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("un-1", "c-1", 600, `{"Email":"back@example.com"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("c8", "Phone", "777", 550)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("c9", "Email", "late@example.com", 590)), "stale")
	pgtest.WantViolations(t, pgtest.Reconcile(t, s, 0), "", 0, "")
}

// TestCommonFieldsAgree: the two restrictions are one with the snapshots
// swapped.
func TestCommonFieldsAgree(t *testing.T) {
	swapped := strings.NewReplacer("f.cur_snapshot", "f.snapshot", "f.snapshot", "f.cur_snapshot").Replace(ingest.StoredInCommon)
	if swapped != ingest.OwnInCommon {
		t.Fatalf("ownInCommon is not storedInCommon swapped:\n%s\n%s", swapped, ingest.OwnInCommon)
	}
}
