package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/oidctest"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// ssoEnv is a console with single sign-on against a real OpenID provider
// (internal/oidctest, zitadel's certified op package), on a clock the test
// moves.
type ssoEnv struct {
	*webtest.Env
	idp   *oidctest.Provider
	ahead atomic.Int64 // how far the console's clock is ahead, in ns
}

const ssoClient, ssoSecret = "tidemark-console", "sso-client-secret-0123456789"

func newSSOEnv(t *testing.T, idpOpts ...oidctest.Option) *ssoEnv {
	s := &ssoEnv{idp: oidctest.Start(t, idpOpts...)}
	s.Env = webtest.SetupConfig(t, postgres.DefaultReadTimeout, webtest.QuietLog(), func(c *web.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(s.ahead.Load())) }
	})
	s.Tenant("globex")
	s.idp.AddClient(oidctest.Client{ID: ssoClient, Secret: ssoSecret, RedirectURIs: []string{s.Srv.URL + "/login/sso/callback"}})
	s.setSSO(t, identity.SSOConfig{})
	for _, r := range []identity.SSORule{{Group: "eng", TenantSlug: "acme", Role: domain.RoleOperator},
		{Group: "eng-leads", TenantSlug: "acme", Role: domain.RoleOwner},
		{Group: "finance", TenantSlug: "globex", Role: domain.RoleViewer},
		{Group: "platform", Admin: true}} {
		if _, err := s.Store.MapSSOGroup(webtest.CliContext(), r); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// setSSO sets single sign-on up against the provider, with c's settings.
func (s *ssoEnv) setSSO(t *testing.T, c identity.SSOConfig) {
	t.Helper()
	c.Issuer, c.ClientID, c.Name, c.AllowPrivate = s.idp.Issuer(), ssoClient, "Acme SSO", true
	if err := s.Store.SetSSO(webtest.CliContext(), identity.NewSSOConfig{SSOConfig: c, ClientSecret: ssoSecret}); err != nil {
		t.Fatal(err)
	}
}

func (s *ssoEnv) person(subject string, groups ...string) {
	s.idp.AddUser(oidctest.User{Subject: subject, Username: subject, Password: "idp-password", Email: subject + "@acme.example",
		EmailVerified: true, Groups: groups})
}

// ssoBrowser is a browser's cookies, following redirects between the
// console and the provider as a browser does.
type ssoBrowser struct {
	t    *testing.T
	s    *ssoEnv
	jar  http.CookieJar
	stop string // a path at which to stop following (its URL is kept)
	held *url.URL
}

func (s *ssoEnv) browser(t *testing.T) *ssoBrowser {
	jar, _ := cookiejar.New(nil)
	return &ssoBrowser{t: t, s: s, jar: jar}
}

func (b *ssoBrowser) client() *http.Client {
	return &http.Client{Jar: b.jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if b.stop != "" && r.URL.Path == b.stop {
			b.held = r.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// page is where a request ended: its status, URL and parsed body.
type page struct {
	status int
	url    *url.URL
	doc    *goquery.Document
	text   string
}

// signedIn reports whether the page is the console's, past sign-in.
func (p page) signedIn() bool {
	return p.status == http.StatusOK && strings.HasPrefix(p.url.String(), "http") && !strings.HasPrefix(p.url.Path, "/login") &&
		strings.Contains(p.text, "Sign out")
}

func (b *ssoBrowser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	return page{status: resp.StatusCode, url: resp.Request.URL, doc: doc, text: strings.Join(strings.Fields(doc.Text()), " ")}
}

func (b *ssoBrowser) get(raw string) page {
	b.t.Helper()
	if strings.HasPrefix(raw, "/") {
		raw = b.s.Srv.URL + raw
	}
	req, _ := http.NewRequest(http.MethodGet, raw, nil)
	return b.do(req)
}

// signIn starts at the console's "Sign in with" link and signs in at the
// provider's form when it shows one.
func (b *ssoBrowser) signIn(subject string) page {
	b.t.Helper()
	p := b.get("/login/sso")
	if p.doc.Find("form #username").Length() == 0 {
		return p // signed in silently, or refused before the form
	}
	form := url.Values{"authRequestID": {p.doc.Find(`input[name=authRequestID]`).AttrOr("value", "")},
		"username": {subject}, "password": {"idp-password"}}
	req, _ := http.NewRequest(http.MethodPost, b.s.idp.URL()+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func (s *ssoEnv) roles(t *testing.T, email string) (admin bool, roles map[string]domain.Role) {
	t.Helper()
	ops, err := s.Store.Operators(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if o.Email == email {
			return o.IsAdmin, o.Roles
		}
	}
	t.Fatalf("no operator %s", email)
	return false, nil
}

// TestSSOSignInSetsAccessFromGroups: the first sign-in creates the
// operator with the memberships their groups map to (the highest role
// where two name one tenant); a later sign-in with a group removed at the
// provider removes what it gave, audited.
func TestSSOSignInSetsAccessFromGroups(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.person("ada", "eng", "eng-leads", "finance", "unmapped")
	b := s.browser(t)
	if p := b.get("/login"); !strings.Contains(p.text, "Sign in with Acme SSO") {
		t.Fatalf("the sign-in page offers no SSO: %s", p.text)
	}
	p := b.signIn("ada")
	if p.status != http.StatusOK || p.url.Path != "/" {
		t.Fatalf("after signing in: %d at %s: %s", p.status, p.url, p.text)
	}
	admin, roles := s.roles(t, "ada@acme.example")
	if admin || roles["acme"] != domain.RoleOwner || roles["globex"] != domain.RoleViewer || len(roles) != 2 {
		t.Fatalf("ada: admin %t, roles %v; want owner of acme, viewer of globex", admin, roles)
	}
	if p := b.get("/t/acme"); p.status != http.StatusOK {
		t.Fatalf("ada's workspace: %d", p.status)
	}

	// The provider drops eng-leads and finance; ada signs in again.
	s.idp.SetGroups("ada", "eng")
	s.idp.SignOut("ada")
	b2 := s.browser(t)
	if p := b2.signIn("ada"); p.status != http.StatusOK {
		t.Fatalf("second sign-in: %d %s", p.status, p.text)
	}
	if _, roles := s.roles(t, "ada@acme.example"); roles["acme"] != domain.RoleOperator || len(roles) != 1 {
		t.Fatalf("after groups removed: %v, want operator of acme only", roles)
	}
	log := strings.Join(s.AuditLog("globex"), "\n")
	if !strings.Contains(log, domain.AuditMemberRemove) {
		t.Errorf("globex's audit log has no member_remove:\n%s", log)
	}
	if p := b2.get("/t/globex"); p.status != http.StatusNotFound {
		t.Errorf("globex after its group was removed: %d, want 404", p.status)
	}
}

// TestSSORefusals: no matching rule, an ID token for another audience, an
// expired one, a replayed or foreign state, each refused with a page that
// says why and no session.
func TestSSORefusals(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.person("bob", "sales")
	p := s.browser(t).signIn("bob")
	if p.status != http.StatusForbidden || !strings.Contains(p.text, "None of your groups gives access") {
		t.Fatalf("no rule: %d %s", p.status, p.text)
	}
	if _, err := s.Store.Operators(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := countUsers(t, s, "bob@acme.example"); n != 0 {
		t.Errorf("an operator was created for bob, who no rule maps")
	}

	t.Run("replayed state", func(t *testing.T) {
		s.person("cy", "eng")
		b := s.browser(t)
		b.stop = "/login/sso/callback"
		b.signIn("cy")
		if b.held == nil {
			t.Fatal("the provider did not send the browser back")
		}
		answer := b.held.String()
		b.stop = ""
		if p := b.get(answer); !p.signedIn() {
			t.Fatalf("the answer: %d at %s %s", p.status, p.url, p.text)
		}
		if p := b.get(answer); p.status != http.StatusUnauthorized || !strings.Contains(p.text, "already used") {
			t.Errorf("the same answer again: %d %s", p.status, p.text)
		}
		if p := s.browser(t).get(answer); p.status != http.StatusUnauthorized {
			t.Errorf("the answer in another browser: %d %s", p.status, p.text)
		}
	})
	t.Run("expired ID token", func(t *testing.T) {
		s.idp.AddClient(oidctest.Client{ID: ssoClient, Secret: ssoSecret, RedirectURIs: []string{s.Srv.URL + "/login/sso/callback"},
			IDTokenLifetime: -5 * time.Minute})
		t.Cleanup(func() {
			s.idp.AddClient(oidctest.Client{ID: ssoClient, Secret: ssoSecret, RedirectURIs: []string{s.Srv.URL + "/login/sso/callback"}})
		})
		s.person("dee", "eng")
		p := s.browser(t).signIn("dee")
		if p.status != http.StatusUnauthorized || !strings.Contains(p.text, "expired") {
			t.Errorf("an expired ID token: %d %s", p.status, p.text)
		}
	})
}

// TestSSOWrongAudienceOrIssuer: an ID token for another client, or a
// provider whose discovery names another issuer, signs nobody in.
func TestSSOWrongAudienceOrIssuer(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t, oidctest.WithAudience("someone-else"))
	s.person("eve", "eng")
	if p := s.browser(t).signIn("eve"); p.status != http.StatusUnauthorized || !strings.Contains(p.text, "audience") {
		t.Errorf("wrong audience: %d %s", p.status, p.text)
	}
	w := newSSOEnv(t, oidctest.WithIssuer("http://issuer.invalid"))
	// The setup names the served address; the provider claims another.
	if err := w.Store.SetSSO(webtest.CliContext(), identity.NewSSOConfig{ClientSecret: ssoSecret, SSOConfig: identity.SSOConfig{
		Issuer: w.idp.URL(), ClientID: ssoClient, Name: "Acme SSO", AllowPrivate: true}}); err != nil {
		t.Fatal(err)
	}
	w.person("eve", "eng")
	if p := w.browser(t).signIn("eve"); p.status != http.StatusServiceUnavailable || !strings.Contains(p.text, "issuer") {
		t.Errorf("wrong issuer: %d %s", p.status, p.text)
	}
}

// TestSSOKeyRotation: after the provider rotates its signing key, the
// next sign-in verifies with the new key.
func TestSSOKeyRotation(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.person("fay", "eng")
	if p := s.browser(t).signIn("fay"); p.status != http.StatusOK {
		t.Fatalf("before rotation: %d %s", p.status, p.text)
	}
	s.idp.RotateKey()
	s.idp.RotateKey() // the first key is gone from the provider's key set
	s.idp.SignOut("fay")
	if p := s.browser(t).signIn("fay"); !p.signedIn() {
		t.Fatalf("after rotation: %d at %s %s", p.status, p.url, p.text)
	}
}

// TestSSOSessionEndsAndRenewsSilently: past the session length the next
// page asks the provider again without a prompt; while it still says yes
// the operator carries on (the rules applied anew), and once their groups
// no longer map, they are out and their API tokens revoked.
func TestSSOSessionEndsAndRenewsSilently(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.setSSO(t, identity.SSOConfig{SessionLength: time.Minute})
	s.person("gus", "eng-leads")
	b := s.browser(t)
	if p := b.signIn("gus"); p.status != http.StatusOK {
		t.Fatalf("sign in: %d %s", p.status, p.text)
	}
	logins := s.idp.Logins()
	if _, err := s.Store.CreateAPIToken(ssoActor(t, s, "gus@acme.example"), s.Tenant("acme").ID,
		domain.NewAPIToken{Name: "gus-token", Access: domain.TokenRead, CreatedBy: s.OperatorID("gus@acme.example")}); err != nil {
		t.Fatal(err)
	}

	s.ahead.Store(int64(2 * time.Minute))
	p := b.get("/t/acme/events")
	if p.status != http.StatusOK || p.url.Path != "/t/acme/events" {
		t.Fatalf("past the session length: %d at %s %s", p.status, p.url, p.text)
	}
	if s.idp.Logins() != logins {
		t.Errorf("the session was renewed with the provider's form, not silently")
	}

	s.idp.SetGroups("gus")
	s.ahead.Store(int64(4 * time.Minute))
	p = b.get("/t/acme/events")
	if p.status != http.StatusForbidden || !strings.Contains(p.text, "None of your groups") {
		t.Fatalf("with no group left: %d at %s %s", p.status, p.url, p.text)
	}
	if _, roles := s.roles(t, "gus@acme.example"); len(roles) != 0 {
		t.Errorf("gus still has %v", roles)
	}
	var revoked bool
	if err := s.Store.Pool().QueryRow(t.Context(), `SELECT revoked_at IS NOT NULL FROM api_tokens WHERE name = 'gus-token'`).Scan(&revoked); err != nil || !revoked {
		t.Errorf("gus's API token revoked: %t (%v)", revoked, err)
	}

	s.idp.SignOut("gus")
	s.idp.SetGroups("gus", "eng")
	s.ahead.Store(int64(6 * time.Minute))
	if p := b.get("/t/acme"); p.status != http.StatusOK || !strings.Contains(p.text, "Sign in with Acme SSO") {
		t.Errorf("the provider says login_required: %d at %s %s", p.status, p.url, p.text)
	}
}

// TestSSOPasswordSignIn: with password sign-in kept for admins, only a
// break-glass admin signs in with a password; off, nobody, and the form
// says to use SSO.
func TestSSOPasswordSignIn(t *testing.T) {
	t.Parallel()
	s := newSSOEnv(t)
	s.Member("root@acme.example", true, domain.RoleOwner, "acme")
	s.Member("ops@acme.example", false, domain.RoleOwner, "acme")
	s.setSSO(t, identity.SSOConfig{PasswordSignIn: identity.PasswordSignInAdmins})
	for _, who := range []string{"root@acme.example", "ops@acme.example"} {
		if ok, msg := s.Anonymous().SignIn(who, webtest.TestPassword); ok {
			t.Errorf("%s signed in with a password though not break-glass (%s)", who, msg)
		}
	}
	if err := s.Store.SetBreakGlass(webtest.CliContext(), "root@acme.example", true); err != nil {
		t.Fatal(err)
	}
	if ok, msg := s.Anonymous().SignIn("root@acme.example", webtest.TestPassword); !ok {
		t.Errorf("the break-glass admin could not sign in: %s", msg)
	}
	s.setSSO(t, identity.SSOConfig{PasswordSignIn: identity.PasswordSignInOff})
	status, doc, _ := s.Anonymous().Post("/login", url.Values{"email": {"root@acme.example"}, "password": {webtest.TestPassword}})
	if status != http.StatusForbidden || !strings.Contains(webtest.Text(doc, ".error"), "Password sign-in is turned off") {
		t.Errorf("password sign-in off: %d %q", status, webtest.Text(doc, ".error"))
	}
	if err := s.Store.DisableSSO(webtest.CliContext()); err != nil {
		t.Fatal(err)
	}
	if ok, msg := s.Anonymous().SignIn("ops@acme.example", webtest.TestPassword); !ok {
		t.Errorf("with SSO off, password sign-in: %s", msg)
	}
}

func countUsers(t *testing.T, s *ssoEnv, email string) int {
	var n int
	if err := s.Store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM users WHERE email = $1`, email).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// ssoActor is the operator email as the actor that creates a token.
func ssoActor(t *testing.T, s *ssoEnv, email string) context.Context {
	return domain.WithActor(t.Context(), domain.Actor{Kind: domain.ActorOperator, Name: email, ID: s.OperatorID(email)})
}
