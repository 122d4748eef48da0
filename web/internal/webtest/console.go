package webtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

const TestPassword = "correct horse battery"

// Browser is a signed-in console session.
type Browser struct {
	E      *Env
	Client *http.Client
}

// Operator creates a console user, an owner of tenants (an admin when
// admin is set), and signs them in.
func (e *Env) Operator(email string, admin bool, tenants ...string) *Browser {
	e.T.Helper()
	e.Member(email, admin, domain.RoleOwner, tenants...)
	return e.SignIn(email)
}

// Member creates a console user with role in each of tenants.
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

// SignIn signs operator email in with a browser of their own.
func (e *Env) SignIn(email string) *Browser {
	e.T.Helper()
	b := e.Anonymous()
	status, _, loc := b.Post("/login", url.Values{"email": {email}, "password": {TestPassword}})
	if status != http.StatusSeeOther || loc == "/login" {
		e.T.Fatalf("sign in as %s: %d to %q", email, status, loc)
	}
	return b
}

// Anonymous is a browser with no session yet.
func (e *Env) Anonymous() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{E: e, Client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Get fetches a page and parses it; redirects are not followed.
func (b *Browser) Get(path string) (int, *goquery.Document) {
	b.E.T.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.E.Srv.URL+path, nil)
	return b.Do(req)
}

// Post submits a form as a same-origin browser would and returns the
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

// Text is the whitespace-collapsed text of the first match of selector.
func Text(doc *goquery.Document, selector string) string {
	return strings.Join(strings.Fields(doc.Find(selector).First().Text()), " ")
}

// OperatorID finds an operator's id from the store.
func (e *Env) OperatorID(email string) int64 {
	e.T.Helper()
	ops, err := e.Store.Operators(context.Background())
	if err != nil {
		e.T.Fatal(err)
	}
	for _, o := range ops {
		if o.Email == email {
			return o.ID
		}
	}
	e.T.Fatalf("no operator %s", email)
	return 0
}

// RedirectOf fetches path and returns the status and the redirect target.
func (b *Browser) RedirectOf(path string) (int, string) {
	b.E.T.Helper()
	resp, err := b.Client.Get(b.E.Srv.URL + path)
	if err != nil {
		b.E.T.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// Memberships lists the workspace links of an operator's row.
func Memberships(row *goquery.Selection) []string {
	var slugs []string
	row.Find("ul.memberships li a").Each(func(_ int, a *goquery.Selection) { slugs = append(slugs, a.Text()) })
	return slugs
}

// SignIn posts the login form and reports whether it signed in, with the
// message shown when it did not.
func (b *Browser) SignIn(email, password string) (bool, string) {
	b.E.T.Helper()
	status, doc, loc := b.Post("/login", url.Values{"email": {email}, "password": {password}})
	return status == http.StatusSeeOther && loc != "/login", Text(doc, "[role=alert]")
}

// SignedIn reports whether the browser's session still opens a page.
func (b *Browser) SignedIn(path string) bool {
	b.E.T.Helper()
	status, loc := b.RedirectOf(path)
	if status == http.StatusOK {
		return true
	}
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
		b.E.T.Fatalf("%s answered %d to %q", path, status, loc)
	}
	return false
}

// ConflictOf delivers revision rev of contact twice with different
// snapshots and returns the id of the conflict the second delivery opened.
func (e *Env) ConflictOf(contact string, rev int, accepted, conflicting string) int64 {
	e.T.Helper()
	if got := e.Outcome("acme", "crm", e.Secret, contact+"-a", SnapshotBody(contact, rev, accepted)); got != "applied" {
		e.T.Fatalf("first snapshot: %s", got)
	}
	if got := e.Outcome("acme", "crm", e.Secret, contact+"-b", SnapshotBody(contact, rev, conflicting)); got != "revision_conflict" {
		e.T.Fatalf("second snapshot: %s", got)
	}
	var id int64
	err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT conflict_id FROM events WHERE event_id = $1 AND outcome = 'revision_conflict'`, contact+"-b").Scan(&id)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

func ShownFlash(doc *goquery.Document) string { return Text(doc, ".flash") }

// Operator2 signs in an existing operator again.
func (e *Env) Operator2(email string) *Browser {
	e.T.Helper()
	b := e.Anonymous()
	status, _, loc := b.Post("/login", url.Values{"email": {email}, "password": {TestPassword}})
	if status != http.StatusSeeOther || loc == "/login" {
		e.T.Fatalf("sign in as %s: %d to %q", email, status, loc)
	}
	return b
}

// AuditLog lists "actor action target: summary" of a tenant's audit
// entries, oldest first.
func (e *Env) AuditLog(tenant string) []string {
	e.T.Helper()
	return e.Strings(`
SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
WHERE tenant_id = $1 ORDER BY id`, e.Tenant(tenant).ID)
}

// ReconcileBroken breaks two invariants of acme by hand (c-1's revision,
// and one person stored twice) and stores a reconciliation's report.
func (e *Env) ReconcileBroken() {
	e.T.Helper()
	ctx := context.Background()
	e.Outcome("acme", "crm", e.Secret, "r1", SnapshotBody("c-1", 1, `{"job_title":"Analyst"}`))
	// The tenant's id is passed in: on Citus an INSERT ... SELECT from the
	// reference table tenants inserted no row, and said nothing.
	acme := e.Tenant("acme").ID
	for _, sql := range []string{
		`UPDATE records SET revision = 7 WHERE tenant_id = $1`,
		`INSERT INTO people (tenant_id, email) VALUES ($1, 'ann@example.com'), ($1, 'ANN@example.com')`,
	} {
		if _, err := e.Store.Pool().Exec(ctx, sql, acme); err != nil {
			e.T.Fatal(err)
		}
	}
	r, err := e.Store.Reconcile(ctx, 0, 0)
	if err == nil {
		err = e.Store.SaveReconciliation(ctx, r)
	}
	if err != nil {
		e.T.Fatal(err)
	}
}

// DeleteContact ingests a HubSpot-style deletion of contact id of acme/crm at revision.
func (e *Env) DeleteContact(id string, revision int64) {
	e.T.Helper()
	ctx := context.Background()
	p, err := e.Store.Endpoint(ctx, "acme", "crm")
	if err != nil {
		e.T.Fatal(err)
	}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
	ev := domain.Event{EventID: "del-" + id, Scope: domain.ScopeName{ObjectType: "contact", Action: "deletion"},
		ObjectID: id, Revision: &revision, Snapshot: json.RawMessage(`{}`), Property: domain.PropertyDeleted, Payload: []byte(`{}`)}
	if _, err := e.Store.Ingest(ctx, d, p, []domain.Event{ev}); err != nil {
		e.T.Fatal(err)
	}
}

// Fill puts real values of tenant globex into a route pattern.
func Fill(pattern string, values map[string]string) string {
	for k, v := range values {
		pattern = strings.ReplaceAll(pattern, "{"+k+"}", url.PathEscape(v))
	}
	return strings.TrimSuffix(pattern, "/*")
}

// WithRole creates an operator with role in acme and signs them in.
func (e *Env) WithRole(email string, role domain.Role) *Browser {
	e.T.Helper()
	e.Member(email, false, role, "acme")
	return e.SignIn(email)
}

// AllText is the whitespace-collapsed text of every match of selector.
func AllText(doc *goquery.Document, selector string) []string {
	var out []string
	doc.Find(selector).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.Join(strings.Fields(s.Text()), " "))
	})
	return out
}

// CellRows is the text of every row matching selector, cells joined by " | ".
func CellRows(doc *goquery.Document, selector string) []string {
	var out []string
	doc.Find(selector).Each(func(_ int, row *goquery.Selection) {
		var cells []string
		row.Find("td").Each(func(_ int, td *goquery.Selection) {
			cells = append(cells, strings.Join(strings.Fields(td.Text()), " "))
		})
		out = append(out, strings.Join(cells, " | "))
	})
	return out
}

// OperatorRow is the row of the operators page (/admin/users) of the
// operator with that email.
func OperatorRow(doc *goquery.Document, email string) *goquery.Selection {
	return doc.Find("table.operators tbody tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
		f := strings.Fields(s.Find(".operator-email").Text())
		return len(f) > 0 && f[0] == email
	})
}

// UserPath is path under the admin page of operator id.
func UserPath(id int64, path string) string {
	return "/admin/users/" + strconv.FormatInt(id, 10) + path
}
