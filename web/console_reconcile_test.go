package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// reconcileBroken breaks two invariants of acme by hand (c-1's revision,
// and one person stored twice) and stores a reconciliation's report.
func (e *env) reconcileBroken() {
	e.t.Helper()
	ctx := context.Background()
	e.outcome("acme", "crm", e.secret, "r1", snapshotBody("c-1", 1, `{"job_title":"Analyst"}`))
	for _, sql := range []string{
		`UPDATE records SET revision = 7`,
		`INSERT INTO people (tenant_id, email) SELECT id, e FROM tenants, unnest(ARRAY['ann@example.com', 'ANN@example.com']) e WHERE slug = 'acme'`,
	} {
		if _, err := e.store.Pool().Exec(ctx, sql); err != nil {
			e.t.Fatal(err)
		}
	}
	r, err := e.store.Reconcile(ctx, 0, 0)
	if err == nil {
		err = e.store.SaveReconciliation(ctx, r)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestReconciliationPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	admin := e.operator("root@example.com", true)
	member := e.operator("ann@example.com", false, "acme")

	if status, _ := member.get("/admin/reconciliation"); status != http.StatusForbidden {
		t.Fatalf("a member opens the reconciliation page: %d", status)
	}
	status, doc := admin.get("/admin/reconciliation")
	if status != http.StatusOK || text(doc, "h1") != "Reconciliation" || text(doc, "header a.active") != "Reconciliation" ||
		!strings.Contains(text(doc, ".empty"), "No reconciliation has run yet") {
		t.Fatalf("before any run: %d %q %q", status, text(doc, "h1"), text(doc, ".empty"))
	}

	e.reconcileBroken()
	_, doc = admin.get("/admin/reconciliation")
	if got := text(doc, ".reconcile-last .badge"); got != "2 violations" {
		t.Errorf("badge %q", got)
	}
	for invariant, want := range map[string]string{"record_revision": "1", "duplicate_person": "1", "idempotency": "0"} {
		if got := text(doc, "#invariant-"+invariant+" td.num"); got != want {
			t.Errorf("%s: %q violations shown, want %s", invariant, got, want)
		}
	}
	link := doc.Find("#violations-record_revision a")
	if href, _ := link.Attr("href"); href != "/t/acme/contacts/crm/c-1" || link.Text() != "contact/c-1" {
		t.Errorf("record link %q to %q", link.Text(), href)
	}
	if got := text(doc, "#violations-record_revision td.detail"); got != "revision 7, but its highest accepted revision is 1 (event r1)" {
		t.Errorf("detail %q", got)
	}
	if got := text(doc, "#violations-duplicate_person td.detail"); !strings.Contains(got, "share this email address") {
		t.Errorf("duplicate detail %q", got)
	}
}

// scrape returns the text of a server's /metrics.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, raw)
	}
	return string(raw)
}

// Every node exports the last stored report, whichever node stored it.
func TestReconciliationMetrics(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var nodes []string
	for range 2 {
		store, err := postgres.New(e.store.Pool(), testKey)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(web.New(web.Config{Services: web.ServicesOf(store), Sessions: store.SessionStore(),
			Ping: store.Pool().Ping, Logger: quietLog(), Collectors: []prometheus.Collector{store.ReconciliationMetrics()}}).Handler())
		t.Cleanup(srv.Close)
		nodes = append(nodes, srv.URL)
	}
	if text := scrape(t, nodes[0]); strings.Contains(text, "tidemark_audit_violations") {
		t.Fatalf("before any report:\n%s", text)
	}
	e.reconcileBroken()
	for _, node := range nodes {
		text := scrape(t, node)
		for _, want := range []string{
			`tidemark_audit_violations{invariant="record_revision"} 1`,
			`tidemark_audit_violations{invariant="duplicate_person"} 1`,
			`tidemark_audit_violations{invariant="idempotency"} 0`,
			`tidemark_audit_last_run_timestamp_seconds `,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s/metrics lacks %s", node, want)
			}
		}
	}
}

// The reconciliation page in a browser, for the screenshot.
func TestBrowserReconciliationPage(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := setup(t)
	e.reconcileBroken()
	if err := e.store.CreateUser(cliContext(), "root@example.com", testPassword, true, "", ""); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate(e.srv.URL+"/login?next=/admin/reconciliation"),
		onPage(`form[action="/login"] input[name=email]`, exact("/login")),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "root@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), testPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		onPage(`form[action="/logout"]`, regexp.MustCompile(`.`)),
		chromedp.Navigate(e.srv.URL+"/admin/reconciliation"),
		onPage(`#violations-record_revision`, exact("/admin/reconciliation")),
		shot(dir, "reconciliation.png"))
	if err != nil {
		t.Fatal(err)
	}
}
