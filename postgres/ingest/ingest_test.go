package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
)

func TestLateRevisionsAreStale(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 10, `{"job_title":"Analyst"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-1", 12, `{"job_title":"Director"}`)), "applied")
	late := ingestOne(t, s, p, event("e3", "c-1", 11, `{"job_title":"Manager"}`))
	wantOutcome(t, late, "stale")
	if late.CurrentRevision == nil || *late.CurrentRevision != 12 {
		t.Fatalf("current revision %v, want 12", late.CurrentRevision)
	}
	wantOutcome(t, ingestOne(t, s, p, event("e4", "c-1", 11, `{"job_title":"Manager"}`)), "stale")

	rev, snap, count := record(t, s, p, "c-1")
	if rev != 12 || snap != `{"job_title": "Director"}` || count != 2 {
		t.Fatalf("record at %d %s count %d, want 12 Director count 2", rev, snap, count)
	}
}

func TestRedeliveryAndReusedEventID(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"a":1,"b":2}`)), "applied")
	// Key order and whitespace do not make a different snapshot.
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{ "b": 2, "a": 1 }`)), "duplicate")
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 2, `{"a":1,"b":2}`)), "event_conflict")
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-2", 1, `{"a":1,"b":2}`)), "event_conflict")
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"a":1}`)), "event_conflict")
	if rev, _, count := record(t, s, p, "c-1"); rev != 1 || count != 1 {
		t.Fatalf("record at %d count %d after duplicates, want 1 and 1", rev, count)
	}
}

func TestRedundantAndRevisionConflicts(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 5, `{"title":"A"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-1", 5, `{"title":"A"}`)), "redundant")
	c := ingestOne(t, s, p, event("e3", "c-1", 5, `{"title":"B"}`))
	wantOutcome(t, c, "revision_conflict")
	if c.ConflictID == 0 {
		t.Fatal("revision conflict opened no conflict")
	}
	var accepted, conflicting, acceptedEvent string
	err := s.Pool().QueryRow(context.Background(), `SELECT accepted_snapshot::text, conflicting_snapshot::text, accepted_event_id
		FROM conflicts WHERE tenant_id = $1 AND id = $2 AND status = 'open'`, p.TenantID, c.ConflictID).
		Scan(&accepted, &conflicting, &acceptedEvent)
	if err != nil {
		t.Fatal(err)
	}
	if accepted != `{"title": "A"}` || conflicting != `{"title": "B"}` || acceptedEvent != "e1" {
		t.Fatalf("conflict holds accepted %s (%s) and conflicting %s", accepted, acceptedEvent, conflicting)
	}
	if _, snap, _ := record(t, s, p, "c-1"); snap != `{"title": "A"}` {
		t.Fatalf("conflict changed the record to %s", snap)
	}

	// An older revision that contradicts a retained one, accepted or stale.
	wantOutcome(t, ingestOne(t, s, p, event("e4", "c-1", 9, `{"title":"C"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("e5", "c-1", 5, `{"title":"Z"}`)), "revision_conflict")
	wantOutcome(t, ingestOne(t, s, p, event("e6", "c-1", 7, `{"title":"S"}`)), "stale")
	wantOutcome(t, ingestOne(t, s, p, event("e7", "c-1", 7, `{"title":"S"}`)), "stale")
	wantOutcome(t, ingestOne(t, s, p, event("e8", "c-1", 7, `{"title":"T"}`)), "revision_conflict")
}

// TestRevisionConflictNamesEarliestRival: of two stale events that hold
// the same other snapshot, a revision conflict names the one received
// first, whichever the log stores first (two nodes write side by side).
func TestRevisionConflictNamesEarliestRival(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := context.Background()
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 9, `{"title":"A"}`)), "applied")
	later, earlier := delivery(p), delivery(p)
	earlier.ReceivedAt = later.ReceivedAt.Add(-time.Minute) // another node's delivery, stored second
	if _, err := s.EnsurePartitions(ctx, earlier.ReceivedAt, postgres.PartitionsAhead); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		d  domain.Delivery
		id string
	}{{later, "e-later"}, {earlier, "e-earlier"}} {
		r, err := s.Ingest(ctx, d.d, p, []domain.Event{event(d.id, "c-1", 7, `{"title":"S"}`)})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, r[0], "stale")
	}
	c := ingestOne(t, s, p, event("e3", "c-1", 7, `{"title":"T"}`))
	wantOutcome(t, c, "revision_conflict")
	if !strings.Contains(c.Reason, "(event e-earlier)") {
		t.Fatalf("reason %q: want the rival received first, e-earlier", c.Reason)
	}
}

func TestNullClearsAField(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"title":"A","phone":"555"}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-1", 2, `{"title":"A","phone":null}`)), "applied")
	if _, snap, _ := record(t, s, p, "c-1"); snap != `{"phone": null, "title": "A"}` {
		t.Fatalf("snapshot %s, want phone cleared to null", snap)
	}
	// A missing field is not the same as null: same revision, different snapshot.
	wantOutcome(t, ingestOne(t, s, p, event("e3", "c-1", 2, `{"title":"A"}`)), "revision_conflict")
}

func TestUnversionedIsRecordedNeverApplied(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-9", -1, `{"title":"A"}`)), "unversioned")
	var n int
	s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM records WHERE tenant_id = $1`, p.TenantID).Scan(&n)
	if n != 0 {
		t.Fatalf("unversioned event created %d records", n)
	}
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-9", -1, `{"title":"A"}`)), "duplicate")
}

func TestSameIDsUnderAnotherTenantAndProvider(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "acme", "enrich")
	otherTenant := newProvider(t, s, "globex", "crm")
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 3, `{"x":1}`)), "applied")
	wantOutcome(t, ingestOne(t, s, other, event("e1", "c-1", 1, `{"x":2}`)), "applied")
	wantOutcome(t, ingestOne(t, s, otherTenant, event("e1", "c-1", 2, `{"x":3}`)), "applied")
	if rev, _, _ := record(t, s, p, "c-1"); rev != 3 {
		t.Fatalf("acme/crm record at %d, want 3", rev)
	}
	if rev, _, _ := record(t, s, otherTenant, "c-1"); rev != 2 {
		t.Fatalf("globex/crm record at %d, want 2", rev)
	}
}

func TestKeyExpiryNeverRollsBack(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"v":1}`)), "applied")
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-1", 2, `{"v":2}`)), "applied")
	if _, err := s.Pool().Exec(context.Background(), `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"v":1}`)), "stale")
	wantOutcome(t, ingestOne(t, s, p, event("e2", "c-1", 2, `{"v":2}`)), "redundant")
	if rev, _, _ := record(t, s, p, "c-1"); rev != 2 {
		t.Fatalf("record rolled back to %d", rev)
	}
	// Within the TTL again, the re-claimed key makes it a duplicate.
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"v":1}`)), "duplicate")
}

func TestFailureBeforeCommitLeavesNoTrace(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	// An error raised after the claim, the record upsert, the event log and
	// the counters, before the transaction commits.
	s.SetBeforeCommit("DO $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$")
	_, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{event("e1", "c-1", 1, `{"v":1}`)})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Message != "injected failure" {
		t.Fatalf("ingest error %v, want the injected failure", err)
	}
	for _, table := range []string{"idempotency_keys", "records", "events", "deliveries", "accepted_revisions", "outcome_counters"} {
		var n int
		s.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE tenant_id = $1", p.TenantID).Scan(&n)
		if n != 0 {
			t.Errorf("%s holds %d rows after a failed delivery", table, n)
		}
	}
	s.SetBeforeCommit("")
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"v":1}`)), "applied")
	// A failure after commit (the response lost) makes the retry a duplicate.
	wantOutcome(t, ingestOne(t, s, p, event("e1", "c-1", 1, `{"v":1}`)), "duplicate")
	if _, _, count := record(t, s, p, "c-1"); count != 1 {
		t.Fatalf("application_count %d, want 1", count)
	}
}
