package access_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

const ssoSecret = "s3cret-client-secret-of-the-provider"

// ssoSetup is what an admin gives to set SSO up, with the defaults left
// empty.
func ssoSetup() identity.NewSSOConfig {
	return identity.NewSSOConfig{SSOConfig: identity.SSOConfig{Name: "Example ID", Issuer: "https://id.example.com",
		ClientID: "tidemark"}, ClientSecret: ssoSecret}
}

// ssoStore is a store with tenants acme and beta, SSO set up as ssoSetup
// with the rules given, and a context with the CLI as actor.
func ssoStore(t *testing.T, rules ...identity.SSORule) (*postgres.Store, context.Context) {
	t.Helper()
	s := pgtest.New(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	for _, slug := range []string{"acme", "beta"} {
		if _, err := s.CreateTenant(ctx, slug, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetSSO(ctx, ssoSetup()); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if _, err := s.MapSSOGroup(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return s, ctx
}

// ssoSignIn signs in by SSO as the console does, the person signing in
// the actor, with a verified email.
func ssoSignIn(s *postgres.Store, email, subject string, groups ...string) (domain.User, error) {
	actor := domain.Actor{Kind: domain.ActorOperator, Name: domain.NormalizeEmail(email), Address: "192.0.2.1"}
	return s.SignInSSO(domain.WithActor(context.Background(), actor), identity.SSOIdentity{Subject: subject, Email: email,
		EmailVerified: true, Groups: groups})
}

// passwordSignIn signs in with pgtest.Password as the console does.
func passwordSignIn(s *postgres.Store, email string) error {
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorOperator, Name: email, Address: "127.0.0.1"})
	_, err := s.Authenticate(ctx, email, pgtest.Password, "127.0.0.1")
	return err
}

// operator returns the operator with email as the admin pages list them,
// or one with ID 0.
func operator(t *testing.T, s *postgres.Store, email string) domain.Operator {
	t.Helper()
	ops, err := s.Operators(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if o.Email == email {
			return o
		}
	}
	return domain.Operator{}
}

// wantRoles fails the test unless the operator's memberships are want.
func wantRoles(t *testing.T, s *postgres.Store, email string, want map[string]domain.Role) {
	t.Helper()
	got := operator(t, s, email).Roles
	if !maps.Equal(got, want) {
		t.Errorf("%s is a member %v, want %v", email, got, want)
	}
}

// audited lists the audit log's entries of action, oldest first, as
// "[tenant] target: summary (by actor)".
func audited(t *testing.T, s *postgres.Store, action string) []string {
	t.Helper()
	entries, _, err := s.AuditLog(context.Background(), domain.AuditQuery{AllTenants: true, Action: action},
		domain.Page{Limit: domain.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range slices.Backward(entries) {
		out = append(out, fmt.Sprintf("[%s] %s: %s (by %s)", e.TenantSlug, e.Target, e.Summary, e.Actor))
	}
	return out
}

// wantAudited fails the test unless the entries of action are want.
func wantAudited(t *testing.T, s *postgres.Store, action string, want ...string) {
	t.Helper()
	if got := audited(t, s, action); !slices.Equal(got, want) {
		t.Errorf("%s entries:\n%s\nwant:\n%s", action, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// one runs sql, which answers one value, with args.
func one[T any](t *testing.T, s *postgres.Store, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := s.Pool().QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

const usersWithEmailSQL = `SELECT count(*) FROM users WHERE email = $1`

func TestSSOSetup(t *testing.T) {
	t.Parallel()
	s := pgtest.New(t, postgres.New)
	ctx := pgtest.AsCLI(context.Background())
	_, err := s.SSOConfig(ctx)
	pgtest.WantCode(t, err, domain.ENOTFOUND)
	_, err = s.SSOClientSecret(ctx)
	pgtest.WantCode(t, err, domain.ENOTFOUND)
	pgtest.WantCode(t, s.DisableSSO(ctx), domain.ENOTFOUND)
	_, err = ssoSignIn(s, "ann@example.com", "sub-ann")
	pgtest.WantCode(t, err, domain.ENOTFOUND)

	n := ssoSetup()
	n.Name, n.Issuer, n.ClientID = "", " https://id.example.com/ ", " tidemark "
	n.AllowedDomains = []string{"@Example.com", "example.com", " ", "corp.example.org"}
	if err := s.SetSSO(ctx, n); err != nil {
		t.Fatal(err)
	}
	c, err := s.SSOConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := identity.SSOConfig{Name: "id.example.com", Issuer: "https://id.example.com", ClientID: "tidemark",
		GroupsClaim: "groups", AllowedDomains: []string{"corp.example.org", "example.com"},
		PasswordSignIn: identity.PasswordSignInAll, SessionLength: 12 * time.Hour, Enabled: true}
	if want.UpdatedAt = c.UpdatedAt; c.UpdatedAt.IsZero() || fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("setup %+v,\nwant %+v", c, want)
	}
	if secret, err := s.SSOClientSecret(ctx); err != nil || secret != ssoSecret {
		t.Errorf("client secret %q, %v; want %q", secret, err, ssoSecret)
	}
	keyID, ciphertext := one[string](t, s, `SELECT key_id FROM sso_config`), one[[]byte](t, s, `SELECT ciphertext FROM sso_config`)
	if keyID == "" || len(ciphertext) == 0 || bytes.Contains(ciphertext, []byte(ssoSecret)) {
		t.Errorf("stored secret under key %q: %q, want it sealed", keyID, ciphertext)
	}
	wantAudited(t, s, domain.AuditSSOSet, "[] https://id.example.com: id.example.com: client id tidemark, groups claim groups, "+
		"allowed domains corp.example.org,example.com, password sign-in all, session length 12h0m0s (by test)")

	// Bad input is refused, and the setup stays as it was.
	bad := map[string]func(*identity.NewSSOConfig){
		"http issuer":        func(n *identity.NewSSOConfig) { n.Issuer = "http://id.example.com" },
		"issuer not a URL":   func(n *identity.NewSSOConfig) { n.Issuer = "id.example.com" },
		"no client id":       func(n *identity.NewSSOConfig) { n.ClientID = " " },
		"no client secret":   func(n *identity.NewSSOConfig) { n.ClientSecret = "" },
		"long name":          func(n *identity.NewSSOConfig) { n.Name = strings.Repeat("x", 41) },
		"password mode":      func(n *identity.NewSSOConfig) { n.PasswordSignIn = "sometimes" },
		"session too short":  func(n *identity.NewSSOConfig) { n.SessionLength = 30 * time.Second },
		"session too long":   func(n *identity.NewSSOConfig) { n.SessionLength = 25 * time.Hour },
		"domain without dot": func(n *identity.NewSSOConfig) { n.AllowedDomains = []string{"example"} },
		"domain is an email": func(n *identity.NewSSOConfig) { n.AllowedDomains = []string{"ann@example.com"} },
	}
	for name, spoil := range bad {
		t.Run(name, func(t *testing.T) {
			n := ssoSetup()
			spoil(&n)
			pgtest.WantCode(t, s.SetSSO(ctx, n), domain.EINVALID)
		})
	}
	if c, _ := s.SSOConfig(ctx); c.Issuer != "https://id.example.com" || c.ClientID != "tidemark" {
		t.Errorf("a refused setup changed it: %+v", c)
	}

	// A test provider over http, with private addresses allowed; then off.
	n = ssoSetup()
	n.Issuer, n.AllowPrivate, n.PasswordSignIn, n.SessionLength = "http://127.0.0.1:5556/dex", true, identity.PasswordSignInOff, time.Hour
	if err := s.SetSSO(ctx, n); err != nil {
		t.Fatal(err)
	}
	if c, err := s.SSOConfig(ctx); err != nil || !c.AllowPrivate || c.Issuer != n.Issuer || c.PasswordSignIn != "off" ||
		c.SessionLength != time.Hour || len(c.AllowedDomains) != 0 || !c.Enabled {
		t.Errorf("test provider setup %+v, %v", c, err)
	}
	if got := audited(t, s, domain.AuditSSOSet); len(got) != 2 || !strings.HasSuffix(got[1], ", private addresses allowed (by test)") {
		t.Errorf("sso_set entries %q", got)
	}
	if err := s.DisableSSO(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.SSOConfig(ctx); err != nil || c.Enabled || c.Issuer != n.Issuer {
		t.Errorf("after disable: %+v, %v; want the setup kept, off", c, err)
	}
	wantAudited(t, s, domain.AuditSSODisable, "[] http://127.0.0.1:5556/dex: single sign-on off; password sign-in for everyone (by test)")
	if all := strings.Join(audited(t, s, ""), "\n"); strings.Contains(all, ssoSecret) {
		t.Errorf("the audit log holds the client secret:\n%s", all)
	}
}

func TestSSORules(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t)
	for _, r := range []identity.SSORule{
		{Group: "ops", TenantSlug: "beta", Role: domain.RoleViewer},
		{Group: " eng ", TenantSlug: "acme", Role: domain.RoleOwner},
		{Group: "eng", Admin: true},
	} {
		got, err := s.MapSSOGroup(ctx, r)
		if err != nil || got.ID == 0 || got.Group != strings.TrimSpace(r.Group) {
			t.Fatalf("map %v: %+v, %v", r, got, err)
		}
	}
	refusals := []struct {
		rule identity.SSORule
		code string
	}{
		{identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleViewer}, domain.ECONFLICT},
		{identity.SSORule{Group: "eng", Admin: true}, domain.ECONFLICT},
		{identity.SSORule{Group: "eng", TenantSlug: "nowhere", Role: domain.RoleViewer}, domain.ENOTFOUND},
		{identity.SSORule{Group: " ", TenantSlug: "acme", Role: domain.RoleViewer}, domain.EINVALID},
		{identity.SSORule{Group: "eng", TenantSlug: "acme", Role: "king"}, domain.EINVALID},
		{identity.SSORule{Group: "eng", TenantSlug: "acme"}, domain.EINVALID},
		{identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleOwner, Admin: true}, domain.EINVALID},
	}
	for _, r := range refusals {
		_, err := s.MapSSOGroup(ctx, r.rule)
		pgtest.WantCode(t, err, r.code)
	}
	listed := func() []string {
		rules, err := s.SSORules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rules {
			out = append(out, r.String())
		}
		return out
	}
	want := []string{`group "eng" → admin`, `group "eng" → owner of acme`, `group "ops" → viewer of beta`}
	if got := listed(); !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}

	pgtest.WantCode(t, s.UnmapSSOGroup(ctx, identity.SSORule{Group: "eng", TenantSlug: "beta"}), domain.ENOTFOUND)
	pgtest.WantCode(t, s.UnmapSSOGroup(ctx, identity.SSORule{Group: "eng", TenantSlug: "nowhere"}), domain.ENOTFOUND)
	pgtest.WantCode(t, s.UnmapSSOGroup(ctx, identity.SSORule{Group: "ops", Admin: true}), domain.ENOTFOUND)
	if err := s.UnmapSSOGroup(ctx, identity.SSORule{Group: " eng ", TenantSlug: "acme"}); err != nil {
		t.Fatal(err)
	}
	pgtest.WantCode(t, s.UnmapSSOGroup(ctx, identity.SSORule{Group: "eng", TenantSlug: "acme"}), domain.ENOTFOUND)
	if err := s.UnmapSSOGroup(ctx, identity.SSORule{Group: "eng", Admin: true}); err != nil {
		t.Fatal(err)
	}
	if got := listed(); !slices.Equal(got, want[2:]) {
		t.Errorf("rules after unmapping %q, want %q", got, want[2:])
	}
	wantAudited(t, s, domain.AuditSSOMap, `[] ops: group "ops" → viewer of beta (by test)`,
		`[] eng: group "eng" → owner of acme (by test)`, `[] eng: group "eng" → admin (by test)`)
	wantAudited(t, s, domain.AuditSSOUnmap, `[] eng: group "eng" → owner of acme (by test)`, `[] eng: group "eng" → admin (by test)`)
}

func TestSSOFirstSignIn(t *testing.T) {
	t.Parallel()
	s, _ := ssoStore(t,
		identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleOperator},
		identity.SSORule{Group: "leads", TenantSlug: "acme", Role: domain.RoleOwner},
		identity.SSORule{Group: "eng", TenantSlug: "beta", Role: domain.RoleViewer},
		identity.SSORule{Group: "root", Admin: true})

	u, err := ssoSignIn(s, "Dev@Example.COM", "sub-dev", "leads", "eng", "unmapped")
	if err != nil {
		t.Fatal(err)
	}
	if u.ID == 0 || u.Email != "dev@example.com" || u.IsAdmin || u.Disabled {
		t.Errorf("signed in as %+v, want dev@example.com, not an admin", u)
	}
	wantRoles(t, s, "dev@example.com", map[string]domain.Role{"acme": domain.RoleOwner, "beta": domain.RoleViewer})
	if subject := one[string](t, s, `SELECT sso_subject FROM users WHERE id = $1`, u.ID); subject != "sub-dev" {
		t.Errorf("subject %q, want sub-dev", subject)
	}

	root, err := ssoSignIn(s, "root@example.com", "sub-root", "root")
	if err != nil || !root.IsAdmin {
		t.Fatalf("admin by rule: %+v, %v", root, err)
	}
	if o := operator(t, s, "root@example.com"); !o.IsAdmin || len(o.Roles) != 0 {
		t.Errorf("operator %+v, want an admin with no memberships", o)
	}

	wantAudited(t, s, domain.AuditOperatorCreate, "[] dev@example.com: by single sign-on (by dev@example.com)",
		"[] root@example.com: by single sign-on (by root@example.com)")
	got := audited(t, s, domain.AuditMemberAdd)
	slices.Sort(got) // the grant's tenants come in no order
	if want := []string{"[acme] dev@example.com: role owner (by dev@example.com)",
		"[beta] dev@example.com: role viewer (by dev@example.com)"}; !slices.Equal(got, want) {
		t.Errorf("member_add entries %q, want %q", got, want)
	}
	wantAudited(t, s, domain.AuditOperatorAdmin, "[] root@example.com: admin false → true by SSO group rules (by root@example.com)")

	// Signing in again with the same groups changes nothing: the sign-in
	// alone is recorded.
	before := len(audited(t, s, ""))
	if again, err := ssoSignIn(s, "dev@example.com", "sub-dev", "eng", "leads"); err != nil || again != u {
		t.Errorf("again: %+v, %v; want %+v", again, err, u)
	}
	if after := len(audited(t, s, "")); after != before+1 {
		t.Errorf("signing in again with the same groups wrote %d audit entries, want the sign-in's", after-before)
	}
	if got := audited(t, s, domain.AuditSignIn); len(got) != 3 || got[0] != "[] dev@example.com: "+domain.SignInSSOSucceeded+" (by dev@example.com)" {
		t.Errorf("sign_in entries %q, want the three sign-ins, the latest dev's", got)
	}
}

func TestSSOGroupRemoved(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t,
		identity.SSORule{Group: "acme-owners", TenantSlug: "acme", Role: domain.RoleOwner},
		identity.SSORule{Group: "acme-viewers", TenantSlug: "acme", Role: domain.RoleViewer},
		identity.SSORule{Group: "beta-owners", TenantSlug: "beta", Role: domain.RoleOwner})
	u, err := ssoSignIn(s, "dev@example.com", "sub-dev", "acme-owners", "beta-owners")
	if err != nil {
		t.Fatal(err)
	}
	wantRoles(t, s, "dev@example.com", map[string]domain.Role{"acme": domain.RoleOwner, "beta": domain.RoleOwner})

	// dev makes a token in each tenant; the CLI one in beta.
	asDev := domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: u.Email})
	tenantIDs := map[string]int64{}
	for _, slug := range []string{"acme", "beta"} {
		tn, err := s.Tenant(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		tenantIDs[slug] = tn.ID
		if _, err := s.CreateAPIToken(asDev, tn.ID, domain.NewAPIToken{Name: "dev-" + slug, Access: domain.TokenRead, CreatedBy: u.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateAPIToken(ctx, tenantIDs["beta"], domain.NewAPIToken{Name: "cli-beta", Access: domain.TokenRead}); err != nil {
		t.Fatal(err)
	}

	// Fewer groups: an owner of acme no more, and beta left.
	if _, err := ssoSignIn(s, "dev@example.com", "sub-dev", "acme-viewers"); err != nil {
		t.Fatal(err)
	}
	wantRoles(t, s, "dev@example.com", map[string]domain.Role{"acme": domain.RoleViewer})
	wantAudited(t, s, domain.AuditMemberRole, "[acme] dev@example.com: role owner → viewer; revoked 1 API token(s) they created (by dev@example.com)")
	wantAudited(t, s, domain.AuditMemberRemove, "[beta] dev@example.com: was owner; revoked 1 API token(s) they created (by dev@example.com)")
	revoked := map[string]bool{}
	for _, id := range tenantIDs {
		tokens, err := s.APITokens(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tokens {
			revoked[k.Name] = !k.RevokedAt.IsZero()
		}
	}
	if want := map[string]bool{"dev-acme": true, "dev-beta": true, "cli-beta": false}; !maps.Equal(revoked, want) {
		t.Errorf("tokens revoked %v, want %v", revoked, want)
	}
	got := audited(t, s, domain.AuditTokenRevoke)
	slices.Sort(got)
	if want := []string{"[acme] dev-acme: its creator is no longer an owner (by dev@example.com)",
		"[beta] dev-beta: its creator left the workspace (by dev@example.com)"}; !slices.Equal(got, want) {
		t.Errorf("token_revoke entries %q, want %q", got, want)
	}
}

func TestSSONoRule(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t,
		identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleOperator},
		identity.SSORule{Group: "root", Admin: true})

	// Nobody to create.
	if _, err := ssoSignIn(s, "stranger@example.com", "sub-stranger", "marketing"); !errors.Is(err, identity.ErrNoSSORule) {
		t.Errorf("a new identity no rule maps: %v, want ErrNoSSORule", err)
	}
	if n := one[int](t, s, usersWithEmailSQL, "stranger@example.com"); n != 0 {
		t.Errorf("%d operators made for an identity no rule maps", n)
	}

	// The last enabled admin loses their memberships but keeps the flag.
	ann, err := ssoSignIn(s, "ann@example.com", "sub-ann", "eng", "root")
	if err != nil || !ann.IsAdmin {
		t.Fatalf("ann: %+v, %v", ann, err)
	}
	if _, err := ssoSignIn(s, "ann@example.com", "sub-ann", "marketing"); !errors.Is(err, identity.ErrNoSSORule) {
		t.Errorf("ann with no mapped group: %v, want ErrNoSSORule", err)
	}
	wantRoles(t, s, "ann@example.com", map[string]domain.Role{})
	if o := operator(t, s, "ann@example.com"); !o.IsAdmin {
		t.Errorf("the last enabled admin lost the flag: %+v", o)
	}
	wantAudited(t, s, domain.AuditMemberRemove, "[acme] ann@example.com: was operator (by ann@example.com)")
	wantAudited(t, s, domain.AuditOperatorAdmin, "[] ann@example.com: admin false → true by SSO group rules (by ann@example.com)",
		"[] ann@example.com: kept admin: no SSO group rule makes them one, but they are the last enabled admin (by ann@example.com)")

	// With another admin, the flag goes too.
	if err := s.CreateUser(ctx, "root@example.com", pgtest.Password, true, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := ssoSignIn(s, "ann@example.com", "sub-ann"); !errors.Is(err, identity.ErrNoSSORule) {
		t.Errorf("ann with no groups: %v, want ErrNoSSORule", err)
	}
	if o := operator(t, s, "ann@example.com"); o.IsAdmin {
		t.Errorf("ann is still an admin: %+v", o)
	}
	if got := audited(t, s, domain.AuditOperatorAdmin); len(got) != 3 ||
		got[2] != "[] ann@example.com: admin true → false by SSO group rules (by ann@example.com)" {
		t.Errorf("operator_admin entries %q", got)
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT n FROM enabled_admins`); n != 1 {
		t.Errorf("the counter says %d enabled admins, want 1", n)
	}
}

func TestSSORefusals(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t, identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleViewer})
	n := ssoSetup()
	n.AllowedDomains = []string{"example.com"}
	if err := s.SetSSO(ctx, n); err != nil {
		t.Fatal(err)
	}
	asCaller := domain.WithActor(ctx, domain.Actor{Kind: domain.ActorOperator, Name: "someone"})

	_, err := s.SignInSSO(asCaller, identity.SSOIdentity{Subject: "sub-ann", Email: "ann@example.com", Groups: []string{"eng"}})
	pgtest.WantCode(t, err, domain.EFORBIDDEN)
	_, err = s.SignInSSO(asCaller, identity.SSOIdentity{Email: "ann@example.com", EmailVerified: true, Groups: []string{"eng"}})
	pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
	_, err = ssoSignIn(s, "ann@elsewhere.example.net", "sub-ann", "eng")
	pgtest.WantCode(t, err, domain.EFORBIDDEN)
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM users`); n != 0 {
		t.Errorf("%d operators made by refused sign-ins", n)
	}

	ann, err := ssoSignIn(s, "ann@example.com", "sub-ann", "eng")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetDisabled(ctx, domain.User{IsAdmin: true}, ann.ID, true); err != nil {
		t.Fatal(err)
	}
	_, err = ssoSignIn(s, "ann@example.com", "sub-ann", "eng")
	pgtest.WantCode(t, err, domain.EFORBIDDEN)

	if err := s.DisableSSO(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = ssoSignIn(s, "ann@example.com", "sub-ann", "eng")
	pgtest.WantCode(t, err, domain.EUNAVAILABLE)
}

func TestSSOLinksPasswordOperator(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t, identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleOperator})
	if err := s.CreateUser(ctx, "Pat@Example.com", pgtest.Password, false, "beta", domain.RoleViewer); err != nil {
		t.Fatal(err)
	}
	pat := operator(t, s, "pat@example.com")

	u, err := ssoSignIn(s, "PAT@example.com", "sub-pat", "eng")
	if err != nil || u.ID != pat.ID {
		t.Fatalf("linking: %+v, %v; want operator %d", u, err, pat.ID)
	}
	if n := one[int](t, s, usersWithEmailSQL, "pat@example.com"); n != 1 {
		t.Errorf("%d operators pat@example.com", n)
	}
	if subject := one[string](t, s, `SELECT sso_subject FROM users WHERE id = $1`, u.ID); subject != "sub-pat" {
		t.Errorf("subject %q, want sub-pat", subject)
	}
	// The rules now set pat's memberships: beta, which none grants, goes.
	wantRoles(t, s, "pat@example.com", map[string]domain.Role{"acme": domain.RoleOperator})
	if got := audited(t, s, domain.AuditOperatorCreate); len(got) != 2 ||
		got[1] != "[] pat@example.com: linked to Example ID at their first single sign-on (by pat@example.com)" {
		t.Errorf("operator_create entries %q", got)
	}

	// Another identity with pat's email is someone else.
	_, err = ssoSignIn(s, "pat@example.com", "sub-impostor", "eng")
	pgtest.WantCode(t, err, domain.EFORBIDDEN)
	if again, err := ssoSignIn(s, "pat@example.com", "sub-pat", "eng"); err != nil || again.ID != pat.ID {
		t.Errorf("pat again: %+v, %v", again, err)
	}
	if err := passwordSignIn(s, "pat@example.com"); err != nil {
		t.Errorf("pat's password while every operator may use one: %v", err)
	}
}

func TestSSOPasswordPolicy(t *testing.T) {
	t.Parallel()
	s, ctx := ssoStore(t)
	for email, admin := range map[string]bool{"root@example.com": true, "ops@example.com": false} {
		if err := s.CreateUser(ctx, email, pgtest.Password, admin, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	policy := func(mode string) {
		t.Helper()
		n := ssoSetup()
		n.PasswordSignIn = mode
		if err := s.SetSSO(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	wantSignIn := func(when string, want map[string]bool) {
		t.Helper()
		for _, email := range []string{"root@example.com", "ops@example.com"} {
			err := passwordSignIn(s, email)
			switch {
			case want[email] && err != nil:
				t.Errorf("%s: %s refused: %v", when, email, err)
			case !want[email]:
				pgtest.WantCode(t, err, domain.EUNAUTHORIZED)
			}
		}
	}
	wantSignIn("all", map[string]bool{"root@example.com": true, "ops@example.com": true})
	policy(identity.PasswordSignInAdmins)
	wantSignIn("admins, none break-glass", nil)

	pgtest.WantCode(t, s.SetBreakGlass(ctx, "ops@example.com", true), domain.EINVALID)
	pgtest.WantCode(t, s.SetBreakGlass(ctx, "nobody@example.com", true), domain.ENOTFOUND)
	if err := s.SetBreakGlass(ctx, " Root@Example.com ", true); err != nil {
		t.Fatal(err)
	}
	wantSignIn("admins, root break-glass", map[string]bool{"root@example.com": true})
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM users WHERE break_glass`); n != 1 {
		t.Errorf("%d break-glass operators, want root alone", n)
	}
	wantAudited(t, s, domain.AuditOperatorBreakGlass,
		"[] root@example.com: break-glass: may sign in with a password when password sign-in is kept for admins (by test)")

	policy(identity.PasswordSignInOff)
	wantSignIn("off", nil)
	if err := s.DisableSSO(ctx); err != nil {
		t.Fatal(err)
	}
	wantSignIn("SSO disabled", map[string]bool{"root@example.com": true, "ops@example.com": true})

	policy(identity.PasswordSignInAdmins)
	if err := s.SetBreakGlass(ctx, "root@example.com", false); err != nil {
		t.Fatal(err)
	}
	wantSignIn("admins, break-glass taken back", nil)
}

// TestSSOFirstSignInRace signs the same new identity in twice at once, as
// two tabs coming back from the provider together do: one operator, and
// neither sign-in fails but for a retryable error.
func TestSSOFirstSignInRace(t *testing.T) {
	t.Parallel()
	s, _ := ssoStore(t, identity.SSORule{Group: "eng", TenantSlug: "acme", Role: domain.RoleOperator})
	for round := range 3 {
		email := fmt.Sprintf("dev%d@example.com", round)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  [2]error
			users [2]domain.User
		)
		for i := range 2 {
			wg.Go(func() {
				<-start
				users[i], errs[i] = ssoSignIn(s, email, "sub-"+email, "eng")
			})
		}
		close(start)
		wg.Wait()
		if n := one[int](t, s, usersWithEmailSQL, email); n != 1 {
			t.Errorf("round %d: %d operators %s, want 1", round, n, email)
		}
		for i, err := range errs {
			if err != nil && domain.ErrorCode(err) != domain.EUNAVAILABLE {
				t.Errorf("round %d, sign-in %d: %v (code %s), want success or a retryable error", round, i, err, domain.ErrorCode(err))
			}
		}
		if errs[0] == nil && errs[1] == nil && users[0].ID != users[1].ID {
			t.Errorf("round %d: both signed in, as %d and %d", round, users[0].ID, users[1].ID)
		}
	}
}
