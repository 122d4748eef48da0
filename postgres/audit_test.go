package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// testActor is who the tests' changes are recorded as made by.
var testActor = pgtest.Operator

// asTest is ctx carrying testActor, as the console's requests carry theirs.
var asTest = pgtest.AsOperator

// newOperator creates an operator (an admin when admin is set) with
// pgtest.Password and returns them.
func newOperator(t *testing.T, s *Store, email string, admin bool) domain.User {
	t.Helper()
	return pgtest.NewOperator(t, s, email, admin)
}

// auditOf lists the entries of one action that q selects, newest first.
func auditOf(t *testing.T, s *Store, q domain.AuditQuery, action string) []domain.AuditEntry {
	t.Helper()
	q.Action = action
	entries, _, err := s.AuditLog(context.Background(), q, domain.Page{Limit: domain.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestAuditRecordsChanges(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	root := newOperator(t, s, "root@example.com", true)
	ops := newOperator(t, s, "ops@example.com", false)
	ingestEvent(t, s, p, event("e12", "c-1", 12, `{"a":1}`))
	conflict := ingestEvent(t, s, p, event("e12b", "c-1", 12, `{"a":2}`)).ConflictID
	const sfToken, rotated = "sf-url-token-not-for-logs", "whsec_cm90YXRlZC1zZWNyZXQ="
	tenant, outside := domain.AuditQuery{TenantID: p.TenantID}, domain.AuditQuery{}

	cases := []struct {
		action  string
		q       domain.AuditQuery
		change  func() error
		target  string
		summary string
	}{
		{domain.AuditProviderCreate, tenant, func() error {
			_, err := s.ConnectProvider(ctx, p.TenantID, "sf", "salesforce", sfToken, map[string]string{"org_id": "00D5e000000AbCdEAK", "revision_field": "SystemModstamp"})
			return err
		}, "sf", "kind salesforce; settings org_id=00D5e000000AbCdEAK, revision_field=SystemModstamp; one secret"},
		{domain.AuditProviderRotate, tenant, func() error {
			return s.RotateProviderSecret(ctx, p.TenantID, p.ID, rotated)
		}, "crm", "new secret added; 0 older secrets retired"},
		{domain.AuditProviderRetire, tenant, func() error {
			_, err := s.RetireProviderSecrets(ctx, p.TenantID, p.ID)
			return err
		}, "crm", "1 older secret retired; the newest stays"},
		{domain.AuditProviderUpdate, tenant, func() error {
			body, skew := int64(2<<20), 10*time.Minute
			_, err := s.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxBody: &body, MaxFutureSkew: &skew})
			return err
		}, "crm", "max body the kind's default → 2 MiB; max future skew 5m0s → 10m0s"},
		{domain.AuditProviderSecretShown, tenant, func() error {
			secrets, err := s.ProviderSecrets(ctx, p.TenantID, p.ID)
			if err != nil {
				return err
			}
			return s.MarkProviderSecretShown(ctx, p.TenantID, p.ID, secrets[0].ID)
		}, "crm", "issued secret %d confirmed as set up at the provider; no longer shown"},
		{domain.AuditScopeUpdate, tenant, func() error {
			sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
			sc.TTL, sc.Enabled = 30*24*time.Hour, false
			return s.SaveProviderScope(ctx, p.TenantID, p.ID, sc)
		}, "crm contact.snapshot", "TTL 7 days → 30 days; enabled true → false"},
		{domain.AuditConflictResolve, tenant, func() error {
			_, err := s.ResolveConflict(ctx, p.TenantID, conflict, domain.ResolveKeep, "  checked with sales  ", "ann@example.com")
			return err
		}, fmt.Sprintf("conflict %d (crm contact %s, revision 12)", conflict, hashedID(t, s, "c-1")), `keep: open → kept; note "checked with sales"`},
		{domain.AuditOperatorAdmin, outside, func() error {
			return s.SetAdmin(ctx, root, ops.ID, true)
		}, "ops@example.com", "admin false → true"},
		{domain.AuditOperatorDisable, outside, func() error {
			return s.SetDisabled(ctx, root, ops.ID, true)
		}, "ops@example.com", "enabled → disabled; sessions ended"},
		{domain.AuditOperatorEnable, outside, func() error {
			return s.SetDisabled(ctx, root, ops.ID, false)
		}, "ops@example.com", "disabled → enabled"},
		{domain.AuditOperatorPassword, outside, func() error {
			return s.ResetPassword(ctx, " OPS@example.com", "a new password")
		}, "ops@example.com", "password reset; sessions ended"},
		{domain.AuditOperatorSignOut, outside, func() error {
			return s.SignOutEverywhere(ctx, ops.ID)
		}, "ops@example.com", "every session ended"},
	}
	for _, c := range cases {
		t.Run(c.action, func(t *testing.T) {
			before := len(auditOf(t, s, c.q, c.action))
			if err := c.change(); err != nil {
				t.Fatal(err)
			}
			entries := auditOf(t, s, c.q, c.action)
			if len(entries) != before+1 {
				t.Fatalf("%d entries after the change, want %d", len(entries), before+1)
			}
			e := entries[0]
			summary := c.summary
			if strings.Contains(summary, "%d") {
				secrets, _ := s.ProviderSecrets(ctx, p.TenantID, p.ID)
				summary = fmt.Sprintf(summary, secrets[0].ID)
			}
			if e.Actor != testActor.Name || e.ActorKind != testActor.Kind || e.ClientAddress != testActor.Address ||
				e.TenantID != c.q.TenantID || e.Target != c.target || e.Summary != summary || time.Since(e.At) > time.Minute {
				t.Fatalf("entry %+v, want target %q and summary %q by %+v", e, c.target, summary, testActor)
			}
		})
	}

	// No summary holds a secret, and each entry names its workspace.
	all, _, err := s.AuditLog(ctx, domain.AuditQuery{AllTenants: true}, domain.Page{Limit: domain.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(cases)+3 { // and setup's provider, and creating the two operators
		t.Fatalf("%d entries in all, want %d", len(all), len(cases)+3)
	}
	for _, e := range all {
		if strings.Contains(e.Summary, sfToken) || strings.Contains(e.Summary, rotated) || strings.Contains(e.Summary, "whsec_") {
			t.Errorf("entry %s holds a secret: %q", e.Action, e.Summary)
		}
		if want := map[bool]string{true: "acme", false: ""}[e.TenantID != 0]; e.TenantSlug != want {
			t.Errorf("entry %s of tenant %d names workspace %q", e.Action, e.TenantID, e.TenantSlug)
		}
	}
}

// A change that fails leaves no entry, and an entry that cannot be written
// leaves no change: both are made in one transaction.
func TestAuditIsPartOfTheChange(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	only := newOperator(t, s, "root@example.com", true)
	cli := domain.User{IsAdmin: true} // the command line's authority

	// The entry is written first, then the database refuses the change.
	if err := s.SetDisabled(ctx, cli, only.ID, true); err != domain.ErrLastAdmin {
		t.Fatalf("disable the only admin: %v, want ErrLastAdmin", err)
	}
	if err := s.SetAdmin(ctx, cli, only.ID, false); err != domain.ErrLastAdmin {
		t.Fatalf("remove the only admin's flag: %v, want ErrLastAdmin", err)
	}
	for _, action := range []string{domain.AuditOperatorDisable, domain.AuditOperatorAdmin} {
		if got := auditOf(t, s, domain.AuditQuery{}, action); len(got) != 0 {
			t.Errorf("a refused %s left entries %+v", action, got)
		}
	}
	if u, err := s.User(ctx, only.ID); err != nil || u.Disabled || !u.IsAdmin {
		t.Fatalf("after the refusals: %+v, %v", u, err)
	}

	// An adoption the record has moved past is refused, unrecorded.
	ingestEvent(t, s, p, event("e1", "c-1", 1, `{"a":1}`))
	conflict := ingestEvent(t, s, p, event("e1b", "c-1", 1, `{"a":2}`)).ConflictID
	ingestEvent(t, s, p, event("e2", "c-1", 2, `{"a":3}`))
	if _, err := s.ResolveConflict(ctx, p.TenantID, conflict, domain.ResolveAdopt, "", "ann"); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("adopt past the record: %v", err)
	}
	if got := auditOf(t, s, domain.AuditQuery{TenantID: p.TenantID}, domain.AuditConflictResolve); len(got) != 0 {
		t.Errorf("a refused resolution left entries %+v", got)
	}

	// Without an actor nothing is changed.
	bare := context.Background()
	if _, err := s.ConnectProvider(bare, p.TenantID, "hooks", "standard", "whsec_dGVzdA==", nil); err == nil {
		t.Fatal("a provider was connected with no actor to record")
	}
	if _, err := s.ProviderSummary(ctx, p.TenantID, "hooks"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("the unrecorded provider exists: %v", err)
	}
	if err := s.RotateProviderSecret(bare, p.TenantID, p.ID, "whsec_bmV3"); err == nil {
		t.Fatal("a secret was rotated with no actor to record")
	}
	if secrets, err := s.ProviderSecrets(ctx, p.TenantID, p.ID); err != nil || len(secrets) != 1 {
		t.Fatalf("secrets after the unrecorded rotation: %v, %v", secrets, err)
	}
}

func TestAuditLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTest(context.Background())
	if _, err := s.RetireProviderSecrets(ctx, p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}
	backdate := `INSERT INTO audit_log (tenant_id, at, actor_kind, actor, action) VALUES ($1, now() - $2::interval, 'cli', 'old', $3)`
	for _, age := range []string{"399 days", "401 days"} {
		if _, err := s.pool.Exec(ctx, backdate, p.TenantID, age, "aged "+age); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`UPDATE audit_log SET summary = 'rewritten'`,
		`UPDATE audit_log SET at = now() - interval '2 years' WHERE action = 'provider_retire'`,
		`DELETE FROM audit_log WHERE action = 'provider_retire'`,
		`DELETE FROM audit_log WHERE action = 'aged 399 days'`,
		`TRUNCATE audit_log`,
	} {
		t.Run(stmt, func(t *testing.T) {
			if _, err := s.pool.Exec(ctx, stmt); err == nil {
				t.Fatal("the audit log accepted it")
			}
			if n := scalar(t, s, `SELECT count(*) FROM audit_log WHERE summary <> 'rewritten'`); n != 4 {
				t.Fatalf("%d intact entries, want 4", n)
			}
		})
	}

	// Retention deletes what is past 400 days, and only that.
	r, err := s.Cleanup(ctx, time.Now(), 30*24*time.Hour)
	if err != nil || r.ExpiredAudit != 1 || !strings.Contains(r.String(), "removed 1 audit entries past their retention") {
		t.Fatalf("cleanup: %v, report %+v", err, r)
	}
	var left []string
	rows, _ := s.pool.Query(ctx, `SELECT action FROM audit_log ORDER BY at`)
	for rows.Next() {
		var a string
		rows.Scan(&a)
		left = append(left, a)
	}
	if rows.Err() != nil || strings.Join(left, ",") != "aged 399 days,provider_create,provider_retire" {
		t.Fatalf("left after retention: %v, %v", left, rows.Err())
	}
}

func scalar(t *testing.T, s *Store, sql string) int {
	t.Helper()
	return pgtest.Scalar(t, s.pool, sql)
}

func TestAuditLogQuery(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "globex", "crm")
	ann := asTest(context.Background())
	bob := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorToken, Name: "deploy bot"})
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "deal", Action: "snapshot"})
	for i := range 5 {
		ctx := ann
		if i%2 == 1 {
			ctx = bob
		}
		sc.Enabled = i%2 == 0
		if err := s.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RetireProviderSecrets(ann, other.TenantID, other.ID); err != nil {
		t.Fatal(err)
	}
	root := newOperator(t, s, "root@example.com", true)
	if err := s.SignOutEverywhere(ann, root.ID); err != nil {
		t.Fatal(err)
	}
	acme := domain.AuditQuery{TenantID: p.TenantID, Action: domain.AuditScopeUpdate}

	// Pages of two follow each other newest first, without gaps or repeats.
	var ids []int64
	page := domain.Page{Limit: 2}
	for pages := 0; ; pages++ {
		entries, next, err := s.AuditLog(ann, acme, page)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, e := range entries {
			if e.TenantID != p.TenantID || e.Action != domain.AuditScopeUpdate {
				t.Fatalf("another tenant's or another action's entry: %+v", e)
			}
			if len(ids) > 0 && e.ID >= ids[len(ids)-1] {
				t.Fatalf("entry %d after %d: not newest first", e.ID, ids[len(ids)-1])
			}
			ids = append(ids, e.ID)
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	if len(ids) != 5 {
		t.Fatalf("paged through %d entries, want 5", len(ids))
	}

	all, _, err := s.AuditLog(ann, acme, domain.Page{})
	if err != nil {
		t.Fatal(err)
	}
	middle := all[2].At
	cases := []struct {
		name string
		q    domain.AuditQuery
		want int
	}{
		{"tenant", domain.AuditQuery{TenantID: p.TenantID}, 6}, // and setup's provider
		{"other tenant", domain.AuditQuery{TenantID: other.TenantID}, 2},
		{"outside any tenant", domain.AuditQuery{}, 2}, // and the operator's creation
		{"all tenants", domain.AuditQuery{AllTenants: true}, 10},
		{"actor", domain.AuditQuery{TenantID: p.TenantID, Actor: "deploy bot"}, 2},
		{"actor elsewhere", domain.AuditQuery{TenantID: other.TenantID, Actor: "deploy bot"}, 0},
		{"action", domain.AuditQuery{AllTenants: true, Action: domain.AuditProviderRetire}, 1},
		{"from", domain.AuditQuery{TenantID: p.TenantID, Action: domain.AuditScopeUpdate, From: middle}, 3},
		{"before", domain.AuditQuery{TenantID: p.TenantID, Action: domain.AuditScopeUpdate, Before: middle}, 2},
		{"every filter", domain.AuditQuery{TenantID: p.TenantID, Actor: testActor.Name, Action: domain.AuditScopeUpdate,
			From: all[4].At, Before: all[0].At}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, next, err := s.AuditLog(ann, c.q, domain.Page{})
			if err != nil || len(got) != c.want || next != "" {
				t.Fatalf("%d entries (next %q), %v; want %d", len(got), next, err, c.want)
			}
		})
	}
	if _, _, err := s.AuditLog(ann, acme, domain.Page{Cursor: "not-a-cursor"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("malformed cursor: %v", err)
	}

	for _, c := range []struct {
		q    domain.AuditQuery
		want string
	}{
		{acme, "provider_create,scope_update"},
		{domain.AuditQuery{TenantID: other.TenantID}, "provider_create,provider_retire"},
		{domain.AuditQuery{AllTenants: true}, "operator_create,operator_sign_out,provider_create,provider_retire,scope_update"},
	} {
		actions, err := s.AuditActions(ann, c.q)
		if err != nil || strings.Join(actions, ",") != c.want {
			t.Errorf("actions of %+v: %v, %v; want %s", c.q, actions, err, c.want)
		}
	}
}
