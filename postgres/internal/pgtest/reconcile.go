package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
)

// ReconcileStore is what the reconciliation fixture needs of a store.
type ReconcileStore interface {
	Store
	domain.ConflictService
	reconciliation.Service
	EnsurePartitions(ctx context.Context, from time.Time, ahead int) ([]string, error)
}

// ReconcileFixture is a database after realistic ingest: two tenants,
// standard snapshots with every outcome, conflicts kept, adopted and open,
// HubSpot-like property changes with a deletion, lead signups and a scope
// identified by snapshot fields; most of it received hours ago, in closed
// hours, the rest now.
type ReconcileFixture[S ReconcileStore] struct {
	S                   S
	CRM, HS, Other, Fld domain.ProviderEndpoint
}

// NewReconcileFixture builds the fixture on a store opened by open.
func NewReconcileFixture[S ReconcileStore](t testing.TB, open Open[S]) ReconcileFixture[S] {
	t.Helper()
	ctx := AsCLI(context.Background())
	s, crm := Setup(t, open)
	f := ReconcileFixture[S]{S: s, CRM: crm, HS: Provider(t, s, "acme", "hs"), Other: Provider(t, s, "globex", "crm")}
	fields := domain.DefaultScope(domain.ScopeName{ObjectType: "profile", Action: "snapshot"})
	fields.IdentifierRule = domain.IdentifierRule{Fields: []string{"email"}}
	if err := s.SaveProviderScope(ctx, crm.TenantID, crm.ID, fields); err != nil {
		t.Fatal(err)
	}
	f.Fld = endpointOf(t, s, "acme", "crm")
	now := time.Now()
	if _, err := s.EnsurePartitions(ctx, now.Add(-48*time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-3 * time.Hour)
	deliver := func(p domain.ProviderEndpoint, e domain.Event, want domain.Outcome) domain.Result {
		t.Helper()
		d := Delivery(p)
		d.ReceivedAt = at
		at = at.Add(time.Second)
		r, err := s.Ingest(ctx, d, p, []domain.Event{e})
		if err != nil {
			t.Fatalf("ingest %s: %v", e.EventID, err)
		}
		WantOutcome(t, r[0], want)
		return r[0]
	}
	resolve := func(r domain.Result, resolution string) {
		t.Helper()
		if _, err := s.ResolveConflict(ctx, crm.TenantID, r.ConflictID, resolution, "", "test"); err != nil {
			t.Fatal(err)
		}
	}

	deliver(crm, Event("e1", "c-1", 1, `{"job_title":"Analyst"}`), domain.Applied)
	deliver(crm, Event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Applied)
	deliver(crm, Event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Duplicate)
	deliver(crm, Event("e2", "c-1", 3, `{"job_title":"Director"}`), domain.EventConflict)
	deliver(crm, Event("e2r", "c-1", 2, `{"job_title":"Director"}`), domain.Redundant)
	deliver(crm, Event("e1s", "c-1", 1, `{"job_title":"Analyst"}`), domain.Stale)
	resolve(deliver(crm, Event("e2c", "c-1", 2, `{"job_title":"VP"}`), domain.RevisionConflict), domain.ResolveAdopt)
	deliver(crm, Event("e5", "c-2", 5, `{"job_title":"CTO"}`), domain.Applied)
	resolve(deliver(crm, Event("e5c", "c-2", 5, `{"job_title":"CEO"}`), domain.RevisionConflict), domain.ResolveKeep)
	deliver(crm, Event("e7", "c-3", 7, `{"job_title":"Intern"}`), domain.Applied)
	deliver(crm, Event("e7c", "c-3", 7, `{"job_title":"Trainee"}`), domain.RevisionConflict)
	deliver(crm, Event("u1", "c-3", -1, `{"job_title":"?"}`), domain.Unversioned)
	bad := Event("r1", "c-4", 1, `{}`)
	bad.RejectReason = "data.revision must be a number"
	deliver(crm, bad, domain.Rejected)

	deliver(f.HS, Change("h0", domain.PropertyCreated, "", 100), domain.Applied)
	deliver(f.HS, Change("h1", "jobtitle", "Director", 300), domain.Applied)
	deliver(f.HS, Change("h2", "jobtitle", "Analyst", 200), domain.Stale)
	deliver(f.HS, Change("h3", "email", "ada@example.com", 200), domain.Applied)
	deliver(f.HS, Change("h4", "jobtitle", "VP Sales", 300), domain.RevisionConflict)
	deliver(f.HS, Change("h5", domain.PropertyDeleted, "", 400), domain.Applied)
	deliver(f.HS, Change("h6", "phone", "555", 350), domain.Stale)
	deliver(f.HS, Change("h7", "phone", "556", 500), domain.Applied)

	deliver(crm, Signup(t, "l1", "ann@example.com", "spring"), domain.Applied)
	deliver(crm, Signup(t, "l2", "bob@example.com", "spring"), domain.Applied)
	deliver(crm, Signup(t, "l3", "ann@example.com", "spring"), domain.Redundant)
	deliver(crm, Signup(t, "l4", "cy@gmail.com", "fall"), domain.Applied)

	profile := func(id, email string, rev int64) domain.Event {
		e := Event(id, "p-1", rev, `{"email":"`+email+`"}`)
		e.Scope.ObjectType = "profile"
		return e
	}
	deliver(f.Fld, profile("f1", "ada@example.com", 1), domain.Applied)
	deliver(f.Fld, profile("f2", "ada@example.com", 1), domain.Duplicate)
	deliver(f.Fld, profile("f3", "ada@example.org", 3), domain.Applied)

	deliver(f.Other, Event("e1", "c-1", 1, `{"job_title":"Analyst"}`), domain.Applied)
	// And some now, in an hour still open.
	at = now
	deliver(crm, Event("e8", "c-3", 8, `{"job_title":"Engineer"}`), domain.Applied)
	deliver(f.Other, Event("e2", "c-1", 2, `{"job_title":"Director"}`), domain.Applied)
	return f
}

func endpointOf(t testing.TB, s Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	p, err := s.Endpoint(context.Background(), tenant, provider)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Exec runs sql on the fixture's pool.
func (f ReconcileFixture[S]) Exec(t testing.TB, sql string, args pgx.NamedArgs) {
	t.Helper()
	if _, err := f.S.Pool().Exec(context.Background(), sql, args); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// WantViolations checks that the report counts n violations of invariant
// and none of any other, each shown with want in its text.
func WantViolations(t testing.TB, r reconciliation.Report, invariant reconciliation.Invariant, n int64, want string) {
	t.Helper()
	for _, i := range reconciliation.Invariants {
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

// Reconcile reconciles tenantID (0: every tenant) without a limit.
func Reconcile(t testing.TB, s reconciliation.Service, tenantID int64) reconciliation.Report {
	t.Helper()
	r, err := s.Reconcile(context.Background(), tenantID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
