package ingest_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestPropertyRevisionsAreGuardedPerProperty(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, change("e0", domain.PropertyCreated, "", 100)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("e1", "jobtitle", "Director", 300)), "applied")
	// A late, older change of jobtitle never overwrites the newer one...
	late := ingestOne(t, s, p, change("e2", "jobtitle", "Analyst", 200))
	wantOutcome(t, late, "stale")
	if !strings.Contains(late.Reason, "jobtitle") {
		t.Fatalf("stale reason %q does not name the property", late.Reason)
	}
	// ...while a change of another property at that older time still applies.
	wantOutcome(t, ingestOne(t, s, p, change("e3", "lifecyclestage", "lead", 200)), "applied")
	if _, snap, count := record(t, s, p, "c-1"); snap != `{"jobtitle": "Director", "lifecyclestage": "lead"}` || count != 3 {
		t.Fatalf("record %s with %d applications, want Director, lead and 3", snap, count)
	}
	// The same occurredAt for one property: same value is redundant, another
	// value is a revision conflict of that property.
	wantOutcome(t, ingestOne(t, s, p, change("e4", "jobtitle", "Director", 300)), "redundant")
	c := ingestOne(t, s, p, change("e5", "jobtitle", "VP Sales", 300))
	wantOutcome(t, c, "revision_conflict")
	if c.ConflictID == 0 {
		t.Fatal("no conflict opened")
	}
	// The same occurredAt on another property is no conflict at all.
	wantOutcome(t, ingestOne(t, s, p, change("e6", "phone", "555", 300)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("e0", domain.PropertyCreated, "", 100)), "duplicate")
	wantOutcome(t, ingestOne(t, s, p, change("e7", domain.PropertyCreated, "", 100)), "redundant")
}

func TestDeletionMakesOlderChangesStale(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, change("e1", "jobtitle", "Director", 300)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("d1", domain.PropertyDeleted, "", 500)), "applied")
	late := ingestOne(t, s, p, change("e2", "lifecyclestage", "customer", 400))
	wantOutcome(t, late, "stale")
	if !strings.Contains(late.Reason, "deletion") {
		t.Fatalf("stale reason %q does not mention the deletion", late.Reason)
	}
	var deleted *int64
	s.Pool().QueryRow(t.Context(), `SELECT deleted_revision FROM records WHERE tenant_id = $1 AND object_id = 'c-1'`, p.TenantID).Scan(&deleted)
	if deleted == nil || *deleted != 500 {
		t.Fatalf("deleted_revision %v, want 500", deleted)
	}
	wantOutcome(t, ingestOne(t, s, p, change("e3", "lifecyclestage", "customer", 600)), "applied")
}

func TestPropertyChangesInOneBatchApplyInOrder(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	events := []domain.Event{
		change("b0", domain.PropertyCreated, "", 100),
		change("b1", "jobtitle", "Analyst", 200),
		change("b2", "jobtitle", "Director", 300),
		change("b3", "jobtitle", "Intern", 150),
	}
	for i := range events {
		events[i].Seq = i
	}
	results, err := s.Ingest(t.Context(), delivery(p), p, events)
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.Outcome{"applied", "applied", "applied", "stale"}
	for i, r := range results {
		if r.Outcome != want[i] {
			t.Errorf("event %d: %s (%s), want %s", i, r.Outcome, r.Reason, want[i])
		}
	}
	if _, snap, _ := record(t, s, p, "c-1"); snap != `{"jobtitle": "Director"}` {
		t.Fatalf("record %s, want Director", snap)
	}
}

// Adopting a property conflict sets that property alone: the record keeps
// its other properties, and reconciliation finds it sound.
func TestAdoptPropertyConflictKeepsOtherProperties(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTestCLI(t.Context())
	wantOutcome(t, ingestOne(t, s, p, change("e1", "jobtitle", "Director", 300)), "applied")
	wantOutcome(t, ingestOne(t, s, p, change("e2", "phone", "555", 400)), "applied")
	c := ingestOne(t, s, p, change("e3", "jobtitle", "VP Sales", 300))
	wantOutcome(t, c, "revision_conflict")
	if _, err := s.ResolveConflict(ctx, p.TenantID, c.ConflictID, domain.ResolveAdopt, "", "test"); err != nil {
		t.Fatal(err)
	}
	if _, snap, count := record(t, s, p, "c-1"); snap != `{"phone": "555", "jobtitle": "VP Sales"}` || count != 3 {
		t.Fatalf("record %s with %d applications, want VP Sales and 555 after 3", snap, count)
	}
	report, err := s.Reconcile(ctx, p.TenantID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if report.Total() != 0 {
		t.Fatalf("reconciliation after the adoption: %+v", report)
	}
}
