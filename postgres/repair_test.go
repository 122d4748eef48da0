package postgres

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func ownerCtx() context.Context {
	return domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorOperator, Name: "owner@example.com"})
}

// deliverBatch ingests events as one delivery whose stored body is body.
func deliverBatch(t *testing.T, s *Store, p domain.ProviderEndpoint, body string, events ...domain.Event) []domain.Result {
	t.Helper()
	d := delivery(p)
	d.Body = []byte(body)
	for i := range events {
		events[i].Seq = i
	}
	r, err := s.Ingest(context.Background(), d, p, events)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func count(t *testing.T, s *Store, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// hashedID is id as the store's audit log names it.
func hashedID(t *testing.T, s *Store, id string) string {
	t.Helper()
	h, err := s.ids.Hasher(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h.HashedID(id)
}

// repairAudit returns the summaries of the tenant's audit entries of action on target.
func repairAudit(t *testing.T, s *Store, tenantID int64, action, target string) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(),
		`SELECT actor || ': ' || summary FROM audit_log WHERE tenant_id = $1 AND action = $2 AND target = $3 ORDER BY id`,
		tenantID, action, target)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestResetLetsTheNextEventApply(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}
	wantOutcome(t, ingestEvent(t, s, p, event("e5", "c-1", 5, `{"job_title":"CTO"}`)), domain.Applied)
	wantOutcome(t, ingestEvent(t, s, p, event("e3", "c-1", 3, `{"job_title":"CFO"}`)), domain.Stale)

	if _, err := s.ResetRecord(context.Background(), p.TenantID, ref); domain.ErrorCode(err) != domain.EINTERNAL {
		t.Fatalf("reset without an actor: %v, want it refused", err)
	}
	rec, err := s.ResetRecord(ownerCtx(), p.TenantID, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Forgotten() || string(rec.Snapshot) != `{"job_title": "CTO"}` || rec.ResetAt == nil {
		t.Fatalf("after reset: %+v, want the revision forgotten and the snapshot kept", rec)
	}
	// An older revision now applies, and becomes the revision to beat.
	wantOutcome(t, ingestEvent(t, s, p, event("e2", "c-1", 2, `{"job_title":"COO"}`)), domain.Applied)
	wantOutcome(t, ingestEvent(t, s, p, event("e1", "c-1", 1, `{"job_title":"CEO"}`)), domain.Stale)
	if rev, snap, n := record(t, s, p, "c-1"); rev != 2 || snap != `{"job_title": "COO"}` || n != 2 {
		t.Fatalf("record at %d %s (%d applications)", rev, snap, n)
	}
	if got := repairAudit(t, s, p.TenantID, domain.ActionRecordReset, "crm/contact/"+hashedID(t, s, "c-1")); len(got) != 1 ||
		got[0] != "owner@example.com: revision 5 forgotten" {
		t.Fatalf("audit entries %q", got)
	}
	tl, err := s.RecordTimeline(context.Background(), p.TenantID, ref, 10)
	if err != nil {
		t.Fatal(err)
	}
	if e := tl.Entries[2]; e.Repair != domain.ActionRecordReset || e.By != "owner@example.com" {
		t.Fatalf("timeline entry 3: %+v, want the reset (after e1 stale and e2 accepted)", e)
	}
	if _, err := s.ResetRecord(ownerCtx(), p.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "nope"}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("reset of an unknown record: %v", err)
	}
}

func TestResetForgetsPropertiesAndDeletion(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	wantOutcome(t, ingestEvent(t, s, p, pgtest.Change("h1", "jobtitle", "Director", 300)), domain.Applied)
	wantOutcome(t, ingestEvent(t, s, p, pgtest.Change("h2", domain.PropertyDeleted, "", 400)), domain.Applied)
	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}
	rec, err := s.Record(context.Background(), p.TenantID, ref)
	if err != nil || rec.DeletedRevision == nil || *rec.DeletedRevision != 400 {
		t.Fatalf("deleted record: %+v, %v", rec, err)
	}
	if rec, err = s.ResetRecord(ownerCtx(), p.TenantID, ref); err != nil || rec.DeletedRevision != nil {
		t.Fatalf("after reset: %+v, %v", rec, err)
	}
	wantOutcome(t, ingestEvent(t, s, p, pgtest.Change("h3", "jobtitle", "Analyst", 200)), domain.Applied)
}

func TestEraseRemovesEveryCopy(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	const secret = "Sekret Title"
	deliverBatch(t, s, p, `{"only":"`+secret+`"}`, event("e1", "c-1", 1, `{"job_title":"`+secret+`"}`))
	deliverBatch(t, s, p, `{"only":"`+secret+` 2"}`, event("e2", "c-1", 2, `{"job_title":"`+secret+` 2"}`))
	r := deliverBatch(t, s, p, `{"mixed":"`+secret+`"}`,
		event("e2c", "c-1", 2, `{"job_title":"`+secret+` 3"}`), event("o1", "c-2", 1, `{"job_title":"Other"}`))
	wantOutcome(t, r[0], domain.RevisionConflict)
	deliverBatch(t, s, p, `{"other":"kept"}`, event("o2", "c-2", 2, `{"job_title":"Other 2"}`))
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO pruned_revisions VALUES ($1, $2, 'contact', 'c-1', 0)`, p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}

	ref := domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}
	e, err := s.EraseRecord(ownerCtx(), p.TenantID, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.Erasure{Records: 1, Revisions: 2, Events: 3, Conflicts: 1, Bodies: 3}); e != want {
		t.Fatalf("erased %+v, want %+v", e, want)
	}
	like := "%" + secret + "%"
	for _, c := range []struct {
		what, sql string
		want      int
	}{
		{"records", `SELECT count(*) FROM records WHERE object_id = 'c-1'`, 0},
		{"pruned revisions", `SELECT count(*) FROM pruned_revisions WHERE object_id = 'c-1'`, 0},
		{"accepted revisions", `SELECT count(*) FROM accepted_revisions WHERE snapshot::text LIKE $1 OR object_id = 'c-1'`, 0},
		{"event content", `SELECT count(*) FROM events WHERE snapshot::text LIKE $1 OR convert_from(payload, 'UTF8') LIKE $1`, 0},
		{"outcome rows", `SELECT count(*) FROM events WHERE object_id = 'c-1' AND payload IS NULL AND snapshot IS NULL`, 3},
		{"conflicts", `SELECT count(*) FROM conflicts WHERE accepted_snapshot::text LIKE $1 OR conflicting_snapshot::text LIKE $1 OR status = 'open'`, 0},
		{"delivery bodies", `SELECT count(*) FROM deliveries WHERE convert_from(body, 'UTF8') LIKE $1`, 0},
		{"bodies of c-1 alone", `SELECT count(*) FROM deliveries WHERE body IS NULL`, 2},
		{"redacted mixed body", `SELECT count(*) FROM deliveries WHERE convert_from(body, 'UTF8') = '` + domain.ErasedBody + `'`, 1},
		{"other record", `SELECT count(*) FROM events WHERE object_id = 'c-2' AND payload IS NOT NULL AND snapshot IS NOT NULL`, 2},
		{"other body", `SELECT count(*) FROM deliveries WHERE convert_from(body, 'UTF8') = '{"other":"kept"}'`, 1},
		{"audit", `SELECT count(*) FROM audit_log WHERE summary LIKE $1`, 0},
	} {
		args := []any{}
		if c.want == 0 && c.what != "records" && c.what != "pruned revisions" {
			args = append(args, like)
		}
		if got := count(t, s, c.sql, args...); got != c.want {
			t.Errorf("%s: %d rows, want %d", c.what, got, c.want)
		}
	}
	if got := repairAudit(t, s, p.TenantID, domain.ActionRecordErase, "crm/contact/"+hashedID(t, s, "c-1")); len(got) != 1 ||
		got[0] != "owner@example.com: 3 events, 2 accepted revisions, 1 conflicts, 3 delivery bodies" {
		t.Fatalf("audit entries %q", got)
	}
	tl, err := s.RecordTimeline(context.Background(), p.TenantID, ref, 10)
	if err != nil || tl.Record != nil || len(tl.Entries) == 0 || tl.Entries[0].Repair != domain.ActionRecordErase {
		t.Fatalf("timeline after erase: %+v, %v", tl, err)
	}
	// The next event of the record starts it afresh.
	wantOutcome(t, ingestEvent(t, s, p, event("e9", "c-1", 1, `{"job_title":"New"}`)), domain.Applied)
	if _, err := s.EraseRecord(ownerCtx(), p.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "nope"}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("erase of an unknown record: %v", err)
	}
}

func TestEraseLead(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	deliverBatch(t, s, p, `{"email":"ann@example.com"}`, pgtest.Signup(t, "l1", "ann@example.com", "spring"))
	deliverBatch(t, s, p, `{"email":"ann@example.com"}`, pgtest.Signup(t, "l2", "Ann@Example.com", "fall"))
	deliverBatch(t, s, p, `{"email":"bob@example.com"}`, pgtest.Signup(t, "l3", "bob@example.com", "fall"))

	e, err := s.EraseLead(ownerCtx(), p.TenantID, " ANN@example.com ")
	if err != nil {
		t.Fatal(err)
	}
	if want := (domain.Erasure{People: 1, Events: 2, Bodies: 2}); e != want {
		t.Fatalf("erased %+v, want %+v", e, want)
	}
	people, accounts, tasks, members := pgtest.LeadCounts(t, s.pool, p.TenantID)
	if people != 1 || accounts != 1 || tasks != 1 || members != 1 {
		t.Fatalf("left %d people, %d accounts, %d tasks, %d memberships; want bob's alone", people, accounts, tasks, members)
	}
	const like = "%ann@example.com%"
	for what, sql := range map[string]string{
		"events":     `SELECT count(*) FROM events WHERE object_id ILIKE $1 OR snapshot::text ILIKE $1 OR convert_from(payload, 'UTF8') ILIKE $1 OR reason ILIKE $1`,
		"deliveries": `SELECT count(*) FROM deliveries WHERE convert_from(body, 'UTF8') ILIKE $1`,
		"people":     `SELECT count(*) FROM people WHERE email ILIKE $1`,
		"tasks":      `SELECT count(*) FROM tasks WHERE title ILIKE $1`,
		"audit":      `SELECT count(*) FROM audit_log WHERE target ILIKE $1 OR summary ILIKE $1`,
	} {
		if got := count(t, s, sql, like); got != 0 {
			t.Errorf("%s: %d rows still name the lead", what, got)
		}
	}
	if got := count(t, s, `SELECT count(*) FROM events WHERE object_type = 'lead' AND payload IS NULL`); got != 2 {
		t.Errorf("%d erased outcome rows, want 2", got)
	}
	if got := repairAudit(t, s, p.TenantID, domain.ActionLeadErase, "lead"); len(got) != 1 ||
		got[0] != "owner@example.com: 1 people; 2 events, 0 accepted revisions, 0 conflicts, 2 delivery bodies" {
		t.Fatalf("audit entries %q", got)
	}
	if _, err := s.EraseLead(ownerCtx(), p.TenantID, "ann@example.com"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("second erase: %v, want ENOTFOUND", err)
	}
}

// TestReconcileAfterRepair: resets and erasures on a consistent database
// leave it consistent, before and after later events.
func TestReconcileAfterRepair(t *testing.T) {
	t.Parallel()
	f := pgtest.NewReconcileFixture(t, New)
	ctx := ownerCtx()
	acme := f.CRM.TenantID
	crm := func(id string) domain.RecordRef {
		return domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: id}
	}
	hs := domain.RecordRef{Provider: "hs", ObjectType: "contact", ObjectID: "c-1"}
	for _, ref := range []domain.RecordRef{crm("c-1"), crm("c-2"), hs} {
		if _, err := f.S.ResetRecord(ctx, acme, ref); err != nil {
			t.Fatal(err)
		}
	}
	pgtest.WantViolations(t, pgtest.Reconcile(t, f.S, 0), "", 0, "")

	wantOutcome(t, ingestEvent(t, f.S, f.CRM, event("after1", "c-1", 1, `{"job_title":"Reset"}`)), domain.Applied)
	wantOutcome(t, ingestEvent(t, f.S, f.HS, pgtest.Change("after2", "jobtitle", "Reset", 250)), domain.Applied)
	wantOutcome(t, ingestEvent(t, f.S, f.HS, pgtest.Change("after3", "jobtitle", "Older", 240)), domain.Stale)
	pgtest.WantViolations(t, pgtest.Reconcile(t, f.S, 0), "", 0, "")

	for _, ref := range []domain.RecordRef{crm("c-3"), hs, {Provider: "crm", ObjectType: "profile", ObjectID: "p-1"}} {
		if _, err := f.S.EraseRecord(ctx, acme, ref); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.S.EraseLead(ctx, acme, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	pgtest.WantViolations(t, pgtest.Reconcile(t, f.S, 0), "", 0, "")
}
