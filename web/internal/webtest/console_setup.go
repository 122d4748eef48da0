package webtest

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
)

const TestPassword = "correct horse battery"

// browser is a signed-in console session.
type Browser struct {
	E      *Env
	Client *http.Client
}

// operator creates a console user, an owner of tenants (an admin when
// admin is set), and signs them in.
func (e *Env) Operator(email string, admin bool, tenants ...string) *Browser {
	e.T.Helper()
	e.Member(email, admin, domain.RoleOwner, tenants...)
	return e.SignIn(email)
}

// member creates a console user with role in each of tenants.
func (e *Env) Member(email string, admin bool, role domain.Role, tenants ...string) {
	e.T.Helper()
	ctx := CliContext()
	first := ""
	if len(tenants) > 0 {
		first = tenants[0]
	}
	if err := e.Store.CreateUser(ctx, email, TestPassword, admin, first, role); err != nil {
		e.T.Fatal(err)
	}
	for _, t := range tenants[min(1, len(tenants)):] {
		if err := e.Store.AddMembership(ctx, domain.NewMembership{UserID: e.OperatorID(email), TenantSlug: t, Role: role}); err != nil {
			e.T.Fatal(err)
		}
	}
}

// signIn signs operator email in with a browser of their own.
func (e *Env) SignIn(email string) *Browser {
	e.T.Helper()
	b := e.Anonymous()
	status, _, loc := b.Post("/login", url.Values{"email": {email}, "password": {TestPassword}})
	if status != http.StatusSeeOther || loc == "/login" {
		e.T.Fatalf("sign in as %s: %d to %q", email, status, loc)
	}
	return b
}

// anonymous is a browser with no session yet.
func (e *Env) Anonymous() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{E: e, Client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get fetches a page and parses it; redirects are not followed.
func (b *Browser) Get(path string) (int, *goquery.Document) {
	b.E.T.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.E.Srv.URL+path, nil)
	return b.Do(req)
}

// post submits a form as a same-origin browser would and returns the
// status, the parsed body and the redirect target.
func (b *Browser) Post(path string, form url.Values) (int, *goquery.Document, string) {
	b.E.T.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.E.Srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.E.Srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.Client.Do(req)
	if err != nil {
		b.E.T.Fatal(err)
	}
	defer resp.Body.Close()
	doc, _ := goquery.NewDocumentFromReader(resp.Body)
	return resp.StatusCode, doc, resp.Header.Get("Location")
}

func (b *Browser) Do(req *http.Request) (int, *goquery.Document) {
	b.E.T.Helper()
	resp, err := b.Client.Do(req)
	if err != nil {
		b.E.T.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		b.E.T.Fatal(err)
	}
	return resp.StatusCode, doc
}

// text is the whitespace-collapsed text of the first match of selector.
func Text(doc *goquery.Document, selector string) string {
	return strings.Join(strings.Fields(doc.Find(selector).First().Text()), " ")
}
