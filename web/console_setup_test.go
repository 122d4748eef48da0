package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
)

const testPassword = "correct horse battery"

// browser is a signed-in console session.
type browser struct {
	e      *env
	client *http.Client
}

// operator creates a console user, an owner of tenants (an admin when
// admin is set), and signs them in.
func (e *env) operator(email string, admin bool, tenants ...string) *browser {
	e.t.Helper()
	e.member(email, admin, domain.RoleOwner, tenants...)
	return e.signIn(email)
}

// member creates a console user with role in each of tenants.
func (e *env) member(email string, admin bool, role domain.Role, tenants ...string) {
	e.t.Helper()
	ctx := cliContext()
	first := ""
	if len(tenants) > 0 {
		first = tenants[0]
	}
	if err := e.store.CreateUser(ctx, email, testPassword, admin, first, role); err != nil {
		e.t.Fatal(err)
	}
	for _, t := range tenants[min(1, len(tenants)):] {
		if err := e.store.AddMembership(ctx, domain.NewMembership{UserID: e.operatorID(email), TenantSlug: t, Role: role}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// signIn signs operator email in with a browser of their own.
func (e *env) signIn(email string) *browser {
	e.t.Helper()
	b := e.anonymous()
	status, _, loc := b.post("/login", url.Values{"email": {email}, "password": {testPassword}})
	if status != http.StatusSeeOther || loc == "/login" {
		e.t.Fatalf("sign in as %s: %d to %q", email, status, loc)
	}
	return b
}

// anonymous is a browser with no session yet.
func (e *env) anonymous() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get fetches a page and parses it; redirects are not followed.
func (b *browser) get(path string) (int, *goquery.Document) {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.srv.URL+path, nil)
	return b.do(req)
}

// post submits a form as a same-origin browser would and returns the
// status, the parsed body and the redirect target.
func (b *browser) post(path string, form url.Values) (int, *goquery.Document, string) {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, _ := goquery.NewDocumentFromReader(resp.Body)
	return resp.StatusCode, doc, resp.Header.Get("Location")
}

func (b *browser) do(req *http.Request) (int, *goquery.Document) {
	b.e.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	return resp.StatusCode, doc
}

// text is the whitespace-collapsed text of the first match of selector.
func text(doc *goquery.Document, selector string) string {
	return strings.Join(strings.Fields(doc.Find(selector).First().Text()), " ")
}

func TestLoginAndLogout(t *testing.T) {
	t.Parallel()
	e := setup(t)
	anon := e.anonymous()
	if status, _ := anon.get("/t/acme"); status != http.StatusSeeOther {
		t.Fatalf("signed-out tenant page answered %d, want a redirect to login", status)
	}
	status, doc, _ := anon.post("/login", url.Values{"email": {"nobody@example.com"}, "password": {"wrong"}})
	if status != http.StatusOK || !strings.Contains(text(doc, "[role=alert]"), "Wrong email or password") {
		t.Fatalf("bad login: %d %q", status, text(doc, "[role=alert]"))
	}

	b := e.operator("ops@example.com", false, "acme")
	status, doc = b.get("/t/acme")
	if status != http.StatusOK || !strings.Contains(text(doc, ".account"), "ops@example.com") {
		t.Fatalf("overview answered %d, account %q", status, text(doc, ".account"))
	}
	if status, _, loc := b.post("/logout", nil); status != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("logout: %d to %q", status, loc)
	}
	if status, _ := b.get("/t/acme"); status != http.StatusSeeOther {
		t.Fatalf("after logout the tenant page answered %d", status)
	}
}

func TestLoginThrottling(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.operator("ops@example.com", false, "acme")
	anon := e.anonymous()
	for range 5 {
		anon.post("/login", url.Values{"email": {"ops@example.com"}, "password": {"wrong"}})
	}
	_, doc, _ := anon.post("/login", url.Values{"email": {"ops@example.com"}, "password": {testPassword}})
	if msg := text(doc, "[role=alert]"); !strings.Contains(msg, "Too many failed sign-ins for this account") {
		t.Fatalf("sixth attempt with the right password: %q, want the throttling message", msg)
	}
}

func TestConsoleSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	resp, err := http.Get(e.srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
}
