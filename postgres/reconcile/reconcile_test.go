package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/reconcile"
)

func TestReconcileConsistentDatabase(t *testing.T) {
	t.Parallel()
	f := pgtest.NewReconcileFixture(t, postgres.New)
	r := pgtest.Reconcile(t, f.S, 0)
	pgtest.WantViolations(t, r, "", 0, "")
	if r.Tenant != "" || len(r.Counts) != len(reconciliation.Invariants) || r.FinishedAt.Before(r.StartedAt) {
		t.Fatalf("report %+v", r)
	}
	if got, want := r.Summary(), "no violations of the 8 invariants (every tenant)"; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	// The fixture's counters were compared: its closed hour is in the check.
	var closed int
	if err := f.S.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE received_at < $1`,
		time.Now().Add(-reconcile.ClosedAfter).Truncate(time.Hour)).Scan(&closed); err != nil || closed < 25 {
		t.Fatalf("%d events in closed hours, %v", closed, err)
	}
}

func TestReconcileReportsEachInvariant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		invariant reconciliation.Invariant
		n         int64
		want      string // in every violation's text
		sql       string // @tenant: acme's id, @crm and @hs: its providers' ids
	}{
		{"record revision", reconciliation.InvariantRecordRevision, 1, "provider crm, contact/c-2: revision 6, but its highest accepted revision is 5 (event e5)",
			`UPDATE records SET revision = 6 WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-2'`},
		{"property revision", reconciliation.InvariantRecordRevision, 1, "provider hs, contact/c-1: property jobtitle at revision 250, but its highest accepted revision is 300 (event h1)",
			`UPDATE records SET property_revisions = jsonb_set(property_revisions, '{jobtitle}', '250') WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"deletion", reconciliation.InvariantRecordRevision, 2, "provider hs, contact/c-1:",
			`UPDATE records SET deleted_revision = NULL, property_revisions = property_revisions - '$deleted' WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"record snapshot", reconciliation.InvariantRecordSnapshot, 1, `provider crm, contact/c-1: snapshot {"job_title": "Director"}, but revision 2 was accepted as {"job_title": "VP"} (event e2c)`,
			`UPDATE records SET snapshot = '{"job_title": "Director"}' WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-1'`},
		{"property value", reconciliation.InvariantRecordSnapshot, 1, `provider hs, contact/c-1: property jobtitle is "CEO", but its revision 300 was accepted as "Director" (event h1)`,
			`UPDATE records SET snapshot = jsonb_set(snapshot, '{jobtitle}', '"CEO"') WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"property without revision", reconciliation.InvariantRecordSnapshot, 1, `provider hs, contact/c-1: property fax is "1", but no accepted revision of it is kept`,
			`UPDATE records SET snapshot = snapshot || '{"fax": "1"}' WHERE tenant_id = @tenant AND provider_id = @hs`},
		{"application count", reconciliation.InvariantApplicationCount, 1, "provider crm, contact/c-1: application count 4, but 3 accepted revisions (3 kept, 0 removed by history retention)",
			`UPDATE records SET application_count = 4 WHERE tenant_id = @tenant AND provider_id = @crm AND object_id = 'c-1'`},
		{"key applied twice", reconciliation.InvariantIdempotency, 1, "provider crm, contact/c-3, event e7 (contact.snapshot): applied at",
			`INSERT INTO events SELECT tenant_id, now(), gen_random_uuid(), seq, provider_id, object_type, action, event_id, object_id,
			        revision, outcome, reason, snapshot, payload, conflict_id, property
			 FROM events WHERE tenant_id = @tenant AND provider_id = @crm AND event_id = 'e7'`},
		{"fields key applied twice", reconciliation.InvariantIdempotency, 1, "provider crm, profile/p-1, event f9 (profile.snapshot): applied at",
			`INSERT INTO events SELECT tenant_id, now(), gen_random_uuid(), seq, provider_id, object_type, action, 'f9', object_id,
			        revision + 10, outcome, reason, snapshot, payload, conflict_id, property
			 FROM events WHERE tenant_id = @tenant AND provider_id = @crm AND event_id = 'f1'`},
		{"outcome counters", reconciliation.InvariantOutcomeCounters, 1, "provider crm, ",
			`UPDATE outcome_counters SET n = n + 1 WHERE tenant_id = @tenant AND provider_id = @crm AND outcome = 'stale'
			 AND (bucket, shard) = (SELECT bucket, shard FROM outcome_counters
			 WHERE tenant_id = @tenant AND provider_id = @crm AND outcome = 'stale' LIMIT 1)`},
		{"open conflict without record", reconciliation.InvariantConflictRecord, 1, "provider crm, contact/c-9, conflict ",
			`UPDATE conflicts SET object_id = 'c-9' WHERE tenant_id = @tenant AND provider_id = @crm AND status = 'open'`},
		{"duplicate person", reconciliation.InvariantDuplicatePerson, 1, "email ann@example.com: people",
			`INSERT INTO people (tenant_id, email) VALUES (@tenant, ' Ann@Example.com')`},
		{"duplicate account", reconciliation.InvariantDuplicateAccount, 1, "domain example.com: accounts",
			`INSERT INTO accounts (tenant_id, domain, name) VALUES (@tenant, 'EXAMPLE.com', 'Example again')`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := pgtest.NewReconcileFixture(t, postgres.New)
			f.Exec(t, c.sql, pgx.NamedArgs{"tenant": f.CRM.TenantID, "crm": f.CRM.ID, "hs": f.HS.ID})
			r := pgtest.Reconcile(t, f.S, 0)
			pgtest.WantViolations(t, r, c.invariant, c.n, "tenant acme, "+c.want)
			// The other tenant is sound, and checked alone.
			pgtest.WantViolations(t, pgtest.Reconcile(t, f.S, f.Other.TenantID), "", 0, "")
			if mine := pgtest.Reconcile(t, f.S, f.CRM.TenantID); mine.Counts[c.invariant] != c.n || mine.Tenant != "acme" {
				t.Errorf("acme alone: %s", mine.Summary())
			}
		})
	}
}

// A limit keeps the first violations of each invariant and every count.
func TestReconcileLimitAndStoredReport(t *testing.T) {
	t.Parallel()
	f := pgtest.NewReconcileFixture(t, postgres.New)
	ctx := context.Background()
	if _, err := f.S.LastReconciliation(ctx); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("last report before any: %v", err)
	}
	f.Exec(t, `UPDATE records SET application_count = application_count + 1 WHERE tenant_id = @tenant`, pgx.NamedArgs{"tenant": f.CRM.TenantID})
	r, err := f.S.Reconcile(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Counts[reconciliation.InvariantApplicationCount] != 5 || len(r.Violations) != 2 {
		t.Fatalf("limit 2: %s, %d listed", r.Summary(), len(r.Violations))
	}
	if !strings.HasPrefix(r.Summary(), "5 violations (application_count 5) of the 8 invariants") {
		t.Fatalf("summary %q", r.Summary())
	}
	tenantOnly, err := f.S.Reconcile(ctx, f.CRM.TenantID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.S.SaveReconciliation(ctx, tenantOnly); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("saving a tenant's report: %v", err)
	}
	if err := f.S.SaveReconciliation(ctx, r); err != nil {
		t.Fatal(err)
	}
	last, err := f.S.LastReconciliation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last.Counts[reconciliation.InvariantApplicationCount] != 5 || len(last.Counts) != len(reconciliation.Invariants) ||
		len(last.Violations) != 2 || last.Violations[0] != r.Violations[0] || !last.StartedAt.Equal(r.StartedAt.Truncate(time.Microsecond)) {
		got, _ := json.Marshal(last)
		t.Fatalf("stored report %s", got)
	}
	if _, err := f.S.Reconcile(ctx, 9999, 0); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("unknown tenant: %v", err)
	}
}

// The nightly run happens once a night, on one node.
func TestReconcileNightly(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	night := time.Date(2031, 5, 6, reconciliation.Hour, 10, 0, 0, time.UTC)
	if _, ran, err := s.ReconcileNightly(ctx, night); err != nil || !ran {
		t.Fatalf("first run: %v, %v", ran, err)
	}
	if _, ran, err := s.ReconcileNightly(ctx, night.Add(12*time.Hour)); err != nil || ran {
		t.Fatalf("same night again: %v, %v", ran, err)
	}
	// Another node holds the lock: this one skips.
	conn, err := reconcile.OwnConn(s.Reconciler, ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, reconcile.LockKey); err != nil {
		t.Fatal(err)
	}
	if _, ran, err := s.ReconcileNightly(ctx, night.Add(24*time.Hour)); err != nil || ran {
		t.Fatalf("while another node runs it: %v, %v", ran, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, reconcile.LockKey); err != nil {
		t.Fatal(err)
	}
	r, ran, err := s.ReconcileNightly(ctx, night.Add(24*time.Hour))
	if err != nil || !ran || r.Total() != 0 {
		t.Fatalf("next night: %v, %v, %s", ran, err, r.Summary())
	}
}
