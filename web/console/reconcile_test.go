package console_test

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
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestReconciliationPage(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	member := e.Operator("ann@example.com", false, "acme")

	if status, _ := member.Get("/admin/reconciliation"); status != http.StatusForbidden {
		t.Fatalf("a member opens the reconciliation page: %d", status)
	}
	status, doc := admin.Get("/admin/reconciliation")
	if status != http.StatusOK || webtest.Text(doc, "h1") != "Reconciliation" || webtest.Text(doc, "header a.active") != "Reconciliation" ||
		!strings.Contains(webtest.Text(doc, ".empty"), "No reconciliation has run yet") {
		t.Fatalf("before any run: %d %q %q", status, webtest.Text(doc, "h1"), webtest.Text(doc, ".empty"))
	}

	e.ReconcileBroken()
	_, doc = admin.Get("/admin/reconciliation")
	if got := webtest.Text(doc, ".reconcile-last .badge"); got != "2 violations" {
		t.Errorf("badge %q", got)
	}
	for invariant, want := range map[string]string{"record_revision": "1", "duplicate_person": "1", "idempotency": "0"} {
		if got := webtest.Text(doc, "#invariant-"+invariant+" td.num"); got != want {
			t.Errorf("%s: %q violations shown, want %s", invariant, got, want)
		}
	}
	link := doc.Find("#violations-record_revision a")
	if href, _ := link.Attr("href"); href != "/t/acme/contacts/crm/c-1" || link.Text() != "contact/c-1" {
		t.Errorf("record link %q to %q", link.Text(), href)
	}
	if got := webtest.Text(doc, "#violations-record_revision td.detail"); got != "revision 7, but its highest accepted revision is 1 (event r1)" {
		t.Errorf("detail %q", got)
	}
	if got := webtest.Text(doc, "#violations-duplicate_person td.detail"); !strings.Contains(got, "share this email address") {
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
	e := webtest.Setup(t)
	var nodes []string
	for range 2 {
		store, err := postgres.New(e.Store.Pool(), webtest.TestKey)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(web.New(web.Config{Store: store, Sessions: store.SessionStore(),
			Ping: store.Pool().Ping, Logger: webtest.QuietLog(), Collectors: []prometheus.Collector{store.ReconciliationMetrics()}}).Handler())
		t.Cleanup(srv.Close)
		nodes = append(nodes, srv.URL)
	}
	if text := scrape(t, nodes[0]); strings.Contains(text, "tidemark_audit_violations") {
		t.Fatalf("before any report:\n%s", text)
	}
	e.ReconcileBroken()
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
	e := webtest.Setup(t)
	e.ReconcileBroken()
	if err := e.Store.CreateUser(webtest.CliContext(), "root@example.com", webtest.TestPassword, true, "", ""); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate(e.Srv.URL+"/login?next=/admin/reconciliation"),
		webtest.OnPage(`form[action="/login"] input[name=email]`, webtest.Exact("/login")),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "root@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), webtest.TestPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		webtest.OnPage(`form[action="/logout"]`, regexp.MustCompile(`.`)),
		chromedp.Navigate(e.Srv.URL+"/admin/reconciliation"),
		webtest.OnPage(`#violations-record_revision`, webtest.Exact("/admin/reconciliation")),
		shot(dir, "reconciliation.png"))
	if err != nil {
		t.Fatal(err)
	}
}
