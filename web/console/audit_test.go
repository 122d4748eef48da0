package console_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// options lists the values of a select's options.
func options(doc *goquery.Document, selector string) []string {
	var out []string
	doc.Find(selector + " option").Each(func(_ int, o *goquery.Selection) {
		if v, _ := o.Attr("value"); v != "" {
			out = append(out, v)
		}
	})
	return out
}

func TestConsoleAuditLog(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	admin := e.Operator("root@example.com", true)
	ann := e.Operator("ann@example.com", false, "acme")

	// Changes made in the console are recorded with who made them and from where.
	if status, _, _ := ann.Post("/t/acme/providers/crm/retire", nil); status != http.StatusSeeOther {
		t.Fatalf("retire: %d", status)
	}
	if status, _, _ := admin.Post("/t/globex/providers/crm/retire", nil); status != http.StatusSeeOther {
		t.Fatalf("retire in globex: %d", status)
	}
	if status, _, _ := admin.Post(webtest.UserPath(e.OperatorID("ann@example.com"), "/sign-out"), nil); status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", status)
	}

	status, doc := admin.Get("/t/acme/audit")
	if status != http.StatusOK || webtest.Text(doc, "h1") != "Audit log" || webtest.Text(doc, "nav.sections a.active") != "Audit log" {
		t.Fatalf("audit page: %d %q, nav %q", status, webtest.Text(doc, "h1"), webtest.Text(doc, "nav.sections a.active"))
	}
	rows := webtest.CellRows(doc, "table.audit tbody tr")
	// (The test's own set-up is recorded too: the provider, and Ann's membership.)
	if len(rows) != 3 || !strings.HasSuffix(rows[0], " | ann@example.com (console) retired the old secrets of a provider crm | 0 older secrets retired; the newest stays | 127.0.0.1") ||
		!strings.HasSuffix(rows[2], " | test (command line) connected a provider crm | kind standard; one secret | command line") {
		t.Fatalf("acme's entries:\n%s", strings.Join(rows, "\n"))
	}
	if got := options(doc, "select[name=action]"); !slices.Equal(got, []string{"member_add", "provider_create", "provider_retire"}) {
		t.Fatalf("action choices %v", got)
	}

	filters := []struct {
		query  string
		status int
		rows   int
		text   string
	}{
		{"?action=provider_retire", http.StatusOK, 1, ""},
		{"?actor=test", http.StatusOK, 2, ""},
		{"?actor=nobody@example.com", http.StatusOK, 0, "No entries match these filters"},
		{"?from=" + time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04"), http.StatusOK, 0, "No entries match"},
		{"?to=" + time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04"), http.StatusOK, 3, ""},
		{"?from=yesterday", http.StatusBadRequest, 0, `"yesterday" is not a date and time for "from"`},
		{"?cursor=garbage", http.StatusBadRequest, 0, "invalid cursor"},
	}
	for _, f := range filters {
		t.Run(f.query, func(t *testing.T) {
			status, doc := admin.Get("/t/acme/audit" + f.query)
			if status != f.status || len(webtest.CellRows(doc, "table.audit tbody tr")) != f.rows || !strings.Contains(webtest.Text(doc, "main"), f.text) {
				t.Fatalf("%d with %d rows: %q", status, len(webtest.CellRows(doc, "table.audit tbody tr")), webtest.Text(doc, "main"))
			}
		})
	}

	// Across tenants, each entry names its workspace; operator changes and
	// sign-ins none.
	status, doc = admin.Get("/admin/audit")
	rows = webtest.CellRows(doc, "table.audit tbody tr")
	if status != http.StatusOK || webtest.Text(doc, "header a.active") != "All audit logs" {
		t.Fatalf("admin audit: %d, nav %q", status, webtest.Text(doc, "header a.active"))
	}
	for _, want := range []string{
		" | none | root@example.com (console) signed out everywhere an operator ann@example.com | every session ended",
		" | globex | root@example.com (console) retired the old secrets of a provider crm",
		" | acme | ann@example.com (console) retired the old secrets of a provider crm",
		" | none | root@example.com (console) signed in | succeeded",
	} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, want) }) {
			t.Errorf("no entry %q in every workspace's log:\n%s", want, strings.Join(rows, "\n"))
		}
	}
	if status, _ := admin.Get("/admin/audit?action=operator_sign_out&actor=root@example.com"); status != http.StatusOK {
		t.Fatalf("filtered admin audit: %d", status)
	}

	// Only admins see every tenant's log.
	ann = e.Operator2("ann@example.com")
	if status, _ := ann.Get("/admin/audit"); status != http.StatusForbidden {
		t.Fatalf("a member's /admin/audit answered %d, want 403", status)
	}
	if status, _ := ann.Get("/t/globex/audit"); status != http.StatusNotFound {
		t.Fatalf("another tenant's audit answered %d, want 404", status)
	}
}

func TestConsoleAuditPages(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("root@example.com", true)
	p, err := e.Store.ProviderSummary(context.Background(), e.Tenant("acme").ID, "crm")
	if err != nil {
		t.Fatal(err)
	}
	for range 55 {
		if _, err := e.Store.RetireProviderSecrets(webtest.CliContext(), p.TenantID, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	path := "/t/acme/audit?action=provider_retire"
	for pages := 1; ; pages++ {
		status, doc := admin.Get(path)
		if status != http.StatusOK || pages > 2 {
			t.Fatalf("page %d: %d", pages, status)
		}
		doc.Find("table.audit tbody tr").Each(func(_ int, tr *goquery.Selection) { seen[tr.AttrOr("id", "")] = true })
		if pages == 2 && doc.Find(`a[rel=first]`).Length() != 1 {
			t.Fatal("the second page has no link to the newest entries")
		}
		next, ok := doc.Find(`a[rel=next]`).Attr("href")
		if !ok {
			break
		}
		if !strings.Contains(next, "action=provider_retire") {
			t.Fatalf("the next page drops the filter: %s", next)
		}
		path = next
	}
	if len(seen) != 55 {
		t.Fatalf("paged through %d entries, want 55", len(seen))
	}
}
