package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// asOperator is ctx with operator email as the actor.
func asOperator(ctx context.Context, email string) context.Context {
	return domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: email, Address: "192.0.2.1"})
}

// newMember creates an operator who is a member of tenant with role and
// returns their id.
func newMember(t *testing.T, s *Store, email, tenant string, role domain.Role) int64 {
	t.Helper()
	ctx := asTestCLI(context.Background())
	if err := s.CreateUser(ctx, email, "correct horse battery", false, tenant, role); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// auditEntries lists "action target: summary" of a tenant's audit log, oldest first.
func auditEntries(t *testing.T, s *Store, tenantID int64) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(),
		`SELECT action || ' ' || target || ': ' || summary || ' by ' || actor FROM audit_log WHERE tenant_id = $1 ORDER BY id`, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestTenantForGivesTheRole(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	newProvider(t, s, "globex", "crm")
	for _, tc := range []struct {
		name   string
		tenant string      // the membership's; "" for none
		role   domain.Role // in tenant
		admin  bool
		want   domain.Role // in acme; "" for not found
	}{
		{"viewer", "acme", domain.RoleViewer, false, domain.RoleViewer},
		{"operator", "acme", domain.RoleOperator, false, domain.RoleOperator},
		{"owner", "acme", domain.RoleOwner, false, domain.RoleOwner},
		{"admin and viewer", "acme", domain.RoleViewer, true, domain.RoleOwner},
		{"admin", "", "", true, domain.RoleOwner},
		{"member elsewhere", "globex", domain.RoleOwner, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := domain.User{ID: newMember(t, s, strings.ReplaceAll(tc.name, " ", "-")+"@example.com", tc.tenant, tc.role), IsAdmin: tc.admin}
			m, err := s.TenantFor(context.Background(), u, "acme")
			if tc.want == "" {
				wantCode(t, err, domain.ENOTFOUND)
			} else if err != nil || m.Role != tc.want || m.Tenant.ID != p.TenantID || m.Tenant.Slug != "acme" {
				t.Errorf("TenantFor = %+v, %v; want role %s", m, err, tc.want)
			}
		})
	}
}

func TestMembershipChangesAreAudited(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ann := newMember(t, s, "ann@example.com", "", "")
	ctx := asOperator(context.Background(), "root@example.com")

	if err := s.AddMembership(ctx, domain.NewMembership{Email: "ANN@example.com ", TenantSlug: "acme", Role: domain.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	err := s.AddMembership(ctx, domain.NewMembership{UserID: ann, TenantSlug: "acme", Role: domain.RoleOwner})
	wantCode(t, err, domain.ECONFLICT)
	wantCode(t, s.AddMembership(ctx, domain.NewMembership{Email: "nobody@example.com", TenantSlug: "acme", Role: domain.RoleOwner}), domain.ENOTFOUND)
	wantCode(t, s.AddMembership(ctx, domain.NewMembership{UserID: ann, TenantSlug: "acme", Role: "king"}), domain.EINVALID)
	if _, err := s.SetMemberRole(ctx, ann, "acme", domain.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetMemberRole(ctx, ann, "acme", domain.RoleOwner); err != nil { // unchanged: nothing to record
		t.Fatal(err)
	}
	if _, err := s.RemoveMembership(ctx, ann, "acme"); err != nil {
		t.Fatal(err)
	}
	_, err = s.SetMemberRole(ctx, ann, "acme", domain.RoleViewer)
	wantCode(t, err, domain.ENOTFOUND)
	_, err = s.RemoveMembership(ctx, ann, "acme")
	wantCode(t, err, domain.ENOTFOUND)

	want := []string{
		"provider_create crm: kind standard; one secret by test", // setup's
		"member_add ann@example.com: role viewer by root@example.com",
		"member_role ann@example.com: role viewer → owner by root@example.com",
		"member_remove ann@example.com: was owner by root@example.com",
	}
	if got := auditEntries(t, s, p.TenantID); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A change without an actor to record is refused, and changes nothing.
	if _, err := s.SetMemberRole(context.Background(), newMember(t, s, "bo@example.com", "acme", domain.RoleOwner), "acme", domain.RoleViewer); err == nil {
		t.Fatal("a role change without an actor was made")
	}
	m, err := s.TenantFor(context.Background(), domain.User{ID: s.userID(t, "bo@example.com")}, "acme")
	if err != nil || m.Role != domain.RoleOwner {
		t.Fatalf("after the refused change: %+v, %v", m, err)
	}
}

func (s *Store) userID(t *testing.T, email string) int64 {
	t.Helper()
	var id int64
	if err := s.pool.QueryRow(context.Background(), `SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestAPITokenLifecycle(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ctx := asTestCLI(context.Background())
	read, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "report", Access: domain.TokenRead, Lifetime: 90 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "x", Access: "admin"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("unknown access: %v", err)
	}
	if _, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: "x", Access: domain.TokenRead, Lifetime: time.Minute}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("a minute's lifetime: %v", err)
	}
	tokens, err := s.APITokens(ctx, p.TenantID)
	if err != nil || len(tokens) != 1 {
		t.Fatalf("APITokens = %+v, %v", tokens, err)
	}
	tk := tokens[0]
	if tk.Access != domain.TokenRead || tk.CreatedBy != "tidemark CLI (test)" || tk.Expired ||
		time.Until(tk.ExpiresAt) < 89*24*time.Hour || time.Until(tk.ExpiresAt) > 91*24*time.Hour {
		t.Fatalf("token %+v", tk)
	}

	// Past its expiry it is refused like a revoked one, and listed as expired.
	if _, err := s.pool.Exec(ctx, `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, tk.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.TenantForToken(ctx, "acme", read)
	wantCode(t, err, domain.EUNAUTHORIZED)
	if tokens, _ := s.APITokens(ctx, p.TenantID); !tokens[0].Expired || tokens[0].Revoked() {
		t.Fatalf("expired token listed as %+v", tokens[0])
	}

	if err := s.RevokeAPIToken(ctx, p.TenantID, tk.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIToken(ctx, p.TenantID, tk.ID); err != nil { // a no-op, not recorded again
		t.Fatal(err)
	}
	wantCode(t, s.RevokeAPIToken(ctx, p.TenantID, tk.ID+1000), domain.ENOTFOUND)
	got := auditEntries(t, s, p.TenantID)
	got = got[1:] // after setup's provider_create
	if len(got) != 2 || !strings.HasPrefix(got[0], "token_create report: read-only, expires ") || got[1] != "token_revoke report:  by test" {
		t.Fatalf("audit log %q", got)
	}
	if strings.Contains(strings.Join(got, " "), read) {
		t.Fatal("the audit log holds the token")
	}
}

func TestOwnerTokensRevokedWithTheRole(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ann := newMember(t, s, "ann@example.com", "acme", domain.RoleOwner)
	bob := newMember(t, s, "bob@example.com", "acme", domain.RoleOwner)
	asAnn := asOperator(context.Background(), "ann@example.com")
	create := func(ctx context.Context, by int64, name string) string {
		t.Helper()
		tok, err := s.CreateAPIToken(ctx, p.TenantID, domain.NewAPIToken{Name: name, Access: domain.TokenWrite, CreatedBy: by})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	annsA, annsB := create(asAnn, ann, "ann a"), create(asAnn, ann, "ann b")
	bobs := create(asOperator(context.Background(), "bob@example.com"), bob, "bob")
	cli := create(asTestCLI(context.Background()), 0, "cli")

	ctx := asOperator(context.Background(), "bob@example.com")
	revoked, err := s.SetMemberRole(ctx, ann, "acme", domain.RoleOperator)
	if err != nil || revoked != 2 {
		t.Fatalf("SetMemberRole = %d, %v; want 2 revoked", revoked, err)
	}
	for tok, works := range map[string]bool{annsA: false, annsB: false, bobs: true, cli: true} {
		if _, err := s.TenantForToken(ctx, "acme", tok); (err == nil) != works {
			t.Errorf("token works %v, want %v", err == nil, works)
		}
	}
	// No longer an owner, she cannot make another.
	_, err = s.CreateAPIToken(asAnn, p.TenantID, domain.NewAPIToken{Name: "late", Access: domain.TokenRead, CreatedBy: ann})
	wantCode(t, err, domain.EFORBIDDEN)

	// Leaving the workspace revokes the tokens of any role.
	if revoked, err := s.RemoveMembership(ctx, bob, "acme"); err != nil || revoked != 1 {
		t.Fatalf("RemoveMembership = %d, %v", revoked, err)
	}
	if _, err := s.TenantForToken(ctx, "acme", bobs); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("bob's token after he left: %v", err)
	}
	log := strings.Join(auditEntries(t, s, p.TenantID), "\n")
	for _, want := range []string{
		"member_role ann@example.com: role owner → operator; revoked 2 API token(s) they created by bob@example.com",
		"token_revoke ann a: its creator is no longer an owner by bob@example.com",
		"token_revoke bob: its creator left the workspace by bob@example.com",
		"member_remove bob@example.com: was owner; revoked 1 API token(s) they created by bob@example.com",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %q:\n%s", want, log)
		}
	}
}

// TestTokenCreationRacesDemotion: an owner creating API tokens while
// another owner demotes them keeps none that works, whichever commits
// first: a token stored before the demotion is revoked by it, one after it
// is refused.
func TestTokenCreationRacesDemotion(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	ann := newMember(t, s, "ann@example.com", "acme", domain.RoleOwner)
	asAnn := asOperator(context.Background(), "ann@example.com")
	asRoot := asOperator(context.Background(), "root@example.com")
	created, refused := 0, 0
	for round := range 20 {
		if _, err := s.SetMemberRole(asRoot, ann, "acme", domain.RoleOwner); err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			start = make(chan struct{})
		)
		for i := range 3 {
			wg.Go(func() {
				<-start
				_, err := s.CreateAPIToken(asAnn, p.TenantID, domain.NewAPIToken{Name: "race", Access: domain.TokenWrite, CreatedBy: ann})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case domain.ErrorCode(err) == domain.EFORBIDDEN:
					refused++
				default:
					t.Errorf("round %d, creator %d: %v", round, i, err)
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, err := s.SetMemberRole(asRoot, ann, "acme", domain.RoleViewer); err != nil {
				t.Errorf("round %d: demote: %v", round, err)
			}
		})
		close(start)
		wg.Wait()
		var working int
		err := s.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM api_tokens WHERE created_by_user_id = $1 AND revoked_at IS NULL`, ann).Scan(&working)
		if err != nil || working != 0 {
			t.Fatalf("round %d: %d of ann's tokens still work after her demotion (%v)", round, working, err)
		}
	}
	t.Logf("%d tokens created before a demotion and revoked by it, %d refused after it", created, refused)
}

// Migration 00018 makes every membership made before roles an owner's,
// and keeps earlier tokens read-write and without expiry.
func TestMigrationMembershipsBecomeOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := migratedTo(t, 17)
	_, err := pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', 'Acme') RETURNING id),
     u AS (INSERT INTO users (email, password_hash) VALUES ('old@example.com', 'x') RETURNING id),
     m AS (INSERT INTO memberships (tenant_id, user_id) SELECT t.id, u.id FROM t, u)
INSERT INTO api_tokens (tenant_id, name, token_hash) SELECT id, 'old', '\x01' FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var role, access, createdBy string
	var expires *time.Time
	err = pool.QueryRow(ctx, `SELECT m.role, k.access, k.created_by, k.expires_at FROM memberships m, api_tokens k`).
		Scan(&role, &access, &createdBy, &expires)
	if err != nil || role != "owner" || access != "write" || createdBy != "" || expires != nil {
		t.Fatalf("after the migration: role %q, access %q, created_by %q, expires %v (%v)", role, access, createdBy, expires, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE memberships SET role = 'king'`); err == nil {
		t.Fatal("a role outside viewer, operator and owner was stored")
	}
}

// An admin acts as an owner of every tenant; losing the flag revokes the
// tokens they made where they are not an owner member, and keeps those of
// a tenant they own.
func TestFormerAdminTokensRevoked(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	root := newOperator(t, s, "root@example.com", true)
	ada := newOperator(t, s, "ada@example.com", true)
	asAda := asOperator(context.Background(), "ada@example.com")
	other, err := s.CreateTenant(asTestCLI(context.Background()), "other", "Other")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddMembership(asTestCLI(context.Background()), domain.NewMembership{UserID: ada.ID, TenantSlug: "other", Role: domain.RoleOwner}); err != nil {
		t.Fatal(err)
	}
	create := func(tenantID int64, name string) string {
		t.Helper()
		tok, err := s.CreateAPIToken(asAda, tenantID, domain.NewAPIToken{Name: name, Access: domain.TokenWrite, CreatedBy: ada.ID})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	asAdmin, owned := create(p.TenantID, "as admin"), create(other.ID, "owned")
	if err := s.SetAdmin(asOperator(context.Background(), "root@example.com"), root, ada.ID, false); err != nil {
		t.Fatal(err)
	}
	_, err = s.TenantForToken(asAda, "acme", asAdmin)
	wantCode(t, err, domain.EUNAUTHORIZED)
	if _, err := s.TenantForToken(asAda, "other", owned); err != nil {
		t.Fatalf("the token of a tenant she owns: %v", err)
	}
}
