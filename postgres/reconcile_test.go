package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// reconcileFixture is a database after realistic ingest: two tenants,
// standard snapshots with every outcome, conflicts kept, adopted and open,
// HubSpot-like property changes with a deletion, lead signups and a scope
// identified by snapshot fields; most of it received hours ago, in closed
// hours, the rest now.
type reconcileFixture struct {
	s                   *Store
	crm, hs, other, fld domain.ProviderEndpoint
}

func newReconcileFixture(t *testing.T) reconcileFixture {
	t.Helper()
	ctx := asTestCLI(context.Background())
	s, crm := setup(t)
	f := reconcileFixture{s: s, crm: crm, hs: newProvider(t, s, "acme", "hs"), other: newProvider(t, s, "globex", "crm")}
	fields := domain.DefaultScope(domain.ScopeName{ObjectType: "profile", Action: "snapshot"})
	fields.IdentifierRule = domain.IdentifierRule{Fields: []string{"email"}}
	if err := s.SaveProviderScope(ctx, crm.TenantID, crm.ID, fields); err != nil {
		t.Fatal(err)
	}
	f.fld = mustEndpointOf(t, s, "acme", "crm")
	now := time.Now()
	if _, err := s.EnsurePartitions(ctx, now.Add(-48*time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-3 * time.Hour)
	deliver := func(p domain.ProviderEndpoint, e domain.Event, want domain.Outcome) domain.Result {
		t.Helper()
		d := delivery(p)
		d.ReceivedAt = at
		at = at.Add(time.Second)
		r, err := s.Ingest(ctx, d, p, []domain.Event{e})
		if err != nil {
			t.Fatalf("ingest %s: %v", e.EventID, err)
		}
		wantOutcome(t, r[0], want)
		return r[0]
	}
	resolve := func(r domain.Result, resolution string) {
		t.Helper()
		if _, err := s.ResolveConflict(ctx, crm.TenantID, r.ConflictID, resolution, "", "test"); err != nil {
			t.Fatal(err)
		}
	}

	deliver(crm, event("e1", "c-1", 1, `{"job_title":"Analyst"}`), domain.Applied)
	deliver(crm, event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Applied)
	deliver(crm, event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Duplicate)
	deliver(crm, event("e2", "c-1", 3, `{"job_title":"Director"}`), domain.EventConflict)
	deliver(crm, event("e2r", "c-1", 2, `{"job_title":"Director"}`), domain.Redundant)
	deliver(crm, event("e1s", "c-1", 1, `{"job_title":"Analyst"}`), domain.Stale)
	resolve(deliver(crm, event("e2c", "c-1", 2, `{"job_title":"VP"}`), domain.RevisionConflict), domain.ResolveAdopt)
	deliver(crm, event("e5", "c-2", 5, `{"job_title":"CTO"}`), domain.Applied)
	resolve(deliver(crm, event("e5c", "c-2", 5, `{"job_title":"CEO"}`), domain.RevisionConflict), domain.ResolveKeep)
	deliver(crm, event("e7", "c-3", 7, `{"job_title":"Intern"}`), domain.Applied)
	deliver(crm, event("e7c", "c-3", 7, `{"job_title":"Trainee"}`), domain.RevisionConflict)
	deliver(crm, event("u1", "c-3", -1, `{"job_title":"?"}`), domain.Unversioned)
	bad := event("r1", "c-4", 1, `{}`)
	bad.RejectReason = "data.revision must be a number"
	deliver(crm, bad, domain.Rejected)

	deliver(f.hs, change("h0", domain.PropertyCreated, "", 100), domain.Applied)
	deliver(f.hs, change("h1", "jobtitle", "Director", 300), domain.Applied)
	deliver(f.hs, change("h2", "jobtitle", "Analyst", 200), domain.Stale)
	deliver(f.hs, change("h3", "email", "ada@example.com", 200), domain.Applied)
	deliver(f.hs, change("h4", "jobtitle", "VP Sales", 300), domain.RevisionConflict)
	deliver(f.hs, change("h5", domain.PropertyDeleted, "", 400), domain.Applied)
	deliver(f.hs, change("h6", "phone", "555", 350), domain.Stale)
	deliver(f.hs, change("h7", "phone", "556", 500), domain.Applied)

	deliver(crm, signup(t, "l1", "ann@example.com", "spring"), domain.Applied)
	deliver(crm, signup(t, "l2", "bob@example.com", "spring"), domain.Applied)
	deliver(crm, signup(t, "l3", "ann@example.com", "spring"), domain.Redundant)
	deliver(crm, signup(t, "l4", "cy@gmail.com", "fall"), domain.Applied)

	profile := func(id, email string, rev int64) domain.Event {
		e := event(id, "p-1", rev, `{"email":"`+email+`"}`)
		e.Scope.ObjectType = "profile"
		return e
	}
	deliver(f.fld, profile("f1", "ada@example.com", 1), domain.Applied)
	deliver(f.fld, profile("f2", "ada@example.com", 1), domain.Duplicate)
	deliver(f.fld, profile("f3", "ada@example.org", 3), domain.Applied)

	deliver(f.other, event("e1", "c-1", 1, `{"job_title":"Analyst"}`), domain.Applied)
	// And some now, in an hour still open.
	at = now
	deliver(crm, event("e8", "c-3", 8, `{"job_title":"Engineer"}`), domain.Applied)
	deliver(f.other, event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Applied)
	return f
}

func mustEndpointOf(t *testing.T, s *Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	p, err := s.Endpoint(context.Background(), tenant, provider)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f reconcileFixture) exec(t *testing.T, sql string, args pgx.NamedArgs) {
	t.Helper()
	if _, err := f.s.pool.Exec(context.Background(), sql, args); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// wantViolations checks that the report counts n violations of invariant
// and none of any other, each shown with want in its text.
func wantViolations(t *testing.T, r domain.ReconciliationReport, invariant domain.Invariant, n int64, want string) {
	t.Helper()
	for _, i := range domain.Invariants {
		if got := r.Counts[i]; (i == invariant && got != n) || (i != invariant && got != 0) {
			t.Errorf("%s: %d violations, want %d", i, got, map[bool]int64{true: n}[i == invariant])
		}
	}
	if int64(len(r.Violations)) != r.Total() {
		t.Errorf("%d violations listed, %d counted", len(r.Violations), r.Total())
	}
	for _, v := range r.Violations {
		if !strings.Contains(v.String(), want) {
			t.Errorf("violation %q does not name %q", v, want)
		}
	}
	if t.Failed() {
		t.Logf("report: %s", r.Summary())
		for _, v := range r.Violations {
			t.Log(v)
		}
	}
}

func reconcile(t *testing.T, s *Store, tenantID int64) domain.ReconciliationReport {
	t.Helper()
	r, err := s.Reconcile(context.Background(), tenantID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReconcileConsistentDatabase(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	r := reconcile(t, f.s, 0)
	wantViolations(t, r, "", 0, "")
	if r.Tenant != "" || len(r.Counts) != len(domain.Invariants) || r.FinishedAt.Before(r.StartedAt) {
		t.Fatalf("report %+v", r)
	}
	if got, want := r.Summary(), "no violations of the 8 invariants (every tenant)"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	// The fixture's counters were compared: its closed hour is in the check.
	var closed int
	if err := f.s.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE received_at < $1`,
		time.Now().Add(-reconcileClosedAfter).Truncate(time.Hour)).Scan(&closed); err != nil || closed < 25 {
		t.Fatalf("%d events in closed hours, %v", closed, err)
	}
}

func TestReconcileReportsEachInvariant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		invariant domain.Invariant
		n         int64
		want      string // in every violation's text
		sql       string // @tenant: acme's id, @crm and @hs: its providers' ids
	}{
		{"record revision", domain.InvariantRecordRevision, 1, "provider crm, contact/c-2: revision 6, but its highest accepted revision is 5 (event e5)",
			`UPDATE records SET revision = 6 WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-2'`},
		{"property revision", domain.InvariantRecordRevision, 1, "provider hs, contact/c-1: property jobtitle at revision 250, but its highest accepted revision is 300 (event h1)",
			`UPDATE records SET property_revisions = jsonb_set(property_revisions, '{jobtitle}', '250') WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"deletion", domain.InvariantRecordRevision, 2, "provider hs, contact/c-1:",
			`UPDATE records SET deleted_revision = NULL, property_revisions = property_revisions - '$deleted' WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"record snapshot", domain.InvariantRecordSnapshot, 1, `provider crm, contact/c-1: snapshot {"job_title": "Director"}, but revision 2 was accepted as {"job_title": "VP"} (event e2c)`,
			`UPDATE records SET snapshot = '{"job_title": "Director"}' WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-1'`},
		{"property value", domain.InvariantRecordSnapshot, 1, `provider hs, contact/c-1: property jobtitle is "CEO", but its revision 300 was accepted as "Director" (event h1)`,
			`UPDATE records SET snapshot = jsonb_set(snapshot, '{jobtitle}', '"CEO"') WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"property without revision", domain.InvariantRecordSnapshot, 1, `provider hs, contact/c-1: property fax is "1", but no accepted revision of it is kept`,
			`UPDATE records SET snapshot = snapshot || '{"fax": "1"}' WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"application count", domain.InvariantApplicationCount, 1, "provider crm, contact/c-1: application count 4, but 3 accepted revisions (3 kept, 0 removed by history retention)",
			`UPDATE records SET application_count = 4 WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-1'`},
		{"key applied twice", domain.InvariantIdempotency, 1, "provider crm, contact/c-3, event e7 (contact.snapshot): applied at",
			`INSERT INTO events SELECT tenant_id, now(), gen_random_uuid(), seq, provider_id, object_type, action, event_id, object_id,
			        revision, outcome, reason, snapshot, payload, conflict_id, property
			 FROM events WHERE tenant_id = @tenant AND provider_id = @crm AND event_id = 'e7'`},
		{"fields key applied twice", domain.InvariantIdempotency, 1, "provider crm, profile/p-1, event f9 (profile.snapshot): applied at",
			`INSERT INTO events SELECT tenant_id, now(), gen_random_uuid(), seq, provider_id, object_type, action, 'f9', object_id,
			        revision + 10, outcome, reason, snapshot, payload, conflict_id, property
			 FROM events WHERE tenant_id = @tenant AND provider_id = @crm AND event_id = 'f1'`},
		{"outcome counters", domain.InvariantOutcomeCounters, 1, "provider crm, ",
			`UPDATE outcome_counters SET n = n + 1 WHERE ctid = (SELECT ctid FROM outcome_counters
			 WHERE tenant_id = @tenant AND provider_id = @crm AND outcome = 'stale' LIMIT 1)`},
		{"open conflict without record", domain.InvariantConflictRecord, 1, "provider crm, contact/c-9, conflict ",
			`UPDATE conflicts SET object_id = 'c-9' WHERE tenant_id = @tenant AND provider_id = @crm AND status = 'open'`},
		{"duplicate person", domain.InvariantDuplicatePerson, 1, "email ann@example.com: people",
			`INSERT INTO people (tenant_id, email) VALUES (@tenant, ' Ann@Example.com')`},
		{"duplicate account", domain.InvariantDuplicateAccount, 1, "domain example.com: accounts",
			`INSERT INTO accounts (tenant_id, domain, name) VALUES (@tenant, 'EXAMPLE.com', 'Example again')`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newReconcileFixture(t)
			f.exec(t, c.sql, pgx.NamedArgs{"tenant": f.crm.TenantID, "crm": f.crm.ID, "hs": f.hs.ID})
			r := reconcile(t, f.s, 0)
			wantViolations(t, r, c.invariant, c.n, "tenant acme, "+c.want)
			// The other tenant is sound, and checked alone.
			wantViolations(t, reconcile(t, f.s, f.other.TenantID), "", 0, "")
			if mine := reconcile(t, f.s, f.crm.TenantID); mine.Counts[c.invariant] != c.n || mine.Tenant != "acme" {
				t.Errorf("acme alone: %s", mine.Summary())
			}
		})
	}
}

// A limit keeps the first violations of each invariant and every count.
func TestReconcileLimitAndStoredReport(t *testing.T) {
	t.Parallel()
	f := newReconcileFixture(t)
	ctx := context.Background()
	if _, err := f.s.LastReconciliation(ctx); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("last report before any: %v", err)
	}
	f.exec(t, `UPDATE records SET application_count = application_count + 1 WHERE tenant_id = @tenant`, pgx.NamedArgs{"tenant": f.crm.TenantID})
	r, err := f.s.Reconcile(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts[domain.InvariantApplicationCount] != 5 || len(r.Violations) != 2 {
		t.Fatalf("limit 2: %s, %d listed", r.Summary(), len(r.Violations))
	}
	if !strings.HasPrefix(r.Summary(), "5 violations (application_count 5) of the 8 invariants") {
		t.Fatalf("summary %q", r.Summary())
	}
	tenantOnly, err := f.s.Reconcile(ctx, f.crm.TenantID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.SaveReconciliation(ctx, tenantOnly); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("saving a tenant's report: %v", err)
	}
	if err := f.s.SaveReconciliation(ctx, r); err != nil {
		t.Fatal(err)
	}
	last, err := f.s.LastReconciliation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last.Counts[domain.InvariantApplicationCount] != 5 || len(last.Counts) != len(domain.Invariants) ||
		len(last.Violations) != 2 || last.Violations[0] != r.Violations[0] || !last.StartedAt.Equal(r.StartedAt.Truncate(time.Microsecond)) {
		got, _ := json.Marshal(last)
		t.Fatalf("stored report %s", got)
	}
	if _, err := f.s.Reconcile(ctx, 9999, 0); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("unknown tenant: %v", err)
	}
}

// The nightly run happens once a night, on one node.
func TestReconcileNightly(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	night := time.Date(2031, 5, 6, domain.ReconciliationHour, 10, 0, 0, time.UTC)
	if _, ran, err := s.ReconcileNightly(ctx, night); err != nil || !ran {
		t.Fatalf("first run: %v, %v", ran, err)
	}
	if _, ran, err := s.ReconcileNightly(ctx, night.Add(12*time.Hour)); err != nil || ran {
		t.Fatalf("same night again: %v, %v", ran, err)
	}
	// Another node holds the lock: this one skips.
	conn, err := s.ownConn(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, reconcileLockKey); err != nil {
		t.Fatal(err)
	}
	if _, ran, err := s.ReconcileNightly(ctx, night.Add(24*time.Hour)); err != nil || ran {
		t.Fatalf("while another node runs it: %v, %v", ran, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, reconcileLockKey); err != nil {
		t.Fatal(err)
	}
	r, ran, err := s.ReconcileNightly(ctx, night.Add(24*time.Hour))
	if err != nil || !ran || r.Total() != 0 {
		t.Fatalf("next night: %v, %v, %s", ran, err, r.Summary())
	}
}
