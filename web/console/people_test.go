package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestConsolePeople(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/people")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".empty"), "lead.signup") {
		t.Fatalf("empty people page: %d %q", status, webtest.Text(doc, ".empty"))
	}
	if got := webtest.Text(doc, `nav.sections a.active`); got != "People" {
		t.Fatalf("active nav %q", got)
	}

	e.Outcome("acme", "crm", e.Secret, "s1", webtest.SignupBody("Ada@Example.com", "Ada", "launch"))
	e.Outcome("acme", "crm", e.Secret, "s2", webtest.SignupBody("ada@example.com", "Ada", "summit"))
	e.Outcome("acme", "crm", e.Secret, "s3", webtest.SignupBody("bob@example.com", "<script>alert(1)</script>", "launch"))

	status, doc = b.Get("/t/acme/people")
	if status != http.StatusOK {
		t.Fatalf("people page: %d", status)
	}
	rows := doc.Find("table.people tbody tr")
	if rows.Length() != 2 {
		t.Fatalf("%d rows, want 2", rows.Length())
	}
	if got := webtest.Text(doc, "table.people tbody tr:first-child .person-link"); got != "bob@example.com" {
		t.Fatalf("first row %q, want the newest person", got)
	}
	if got := webtest.Text(doc, "table.people tbody tr:first-child .person-name"); got != "<script>alert(1)</script>" {
		t.Fatalf("name rendered as %q", got)
	}
	if doc.Find("main script").Length() != 0 {
		t.Fatal("a person's name became a script element")
	}
	ada := doc.Find("table.people tbody tr").Eq(1)
	var cells []string
	ada.Find("td").Each(func(_ int, td *goquery.Selection) { cells = append(cells, strings.TrimSpace(td.Text())) })
	if got := strings.Join(cells, " | "); got != "ada@example.com | Ada | example.com | 1 | launch, summit" {
		t.Fatalf("ada row %q", got)
	}
	href, _ := ada.Find("a.person-link").Attr("href")

	status, doc = b.Get("/t/acme/people?email=" + url.QueryEscape(" ADA@example.com"))
	if status != http.StatusOK || doc.Find("table.people tbody tr").Length() != 1 {
		t.Fatalf("search: %d, %d rows", status, doc.Find("table.people tbody tr").Length())
	}
	status, doc = b.Get("/t/acme/people?email=nobody@example.com")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".empty"), "nobody@example.com") {
		t.Fatalf("search for nobody: %d %q", status, webtest.Text(doc, ".empty"))
	}

	status, doc = b.Get(href)
	if status != http.StatusOK {
		t.Fatalf("person page %s: %d", href, status)
	}
	for sel, want := range map[string]string{".person-email": "ada@example.com", ".person-name": "Ada",
		".person-source": "webinar", ".account-name": "Example", ".account-domain": "example.com",
		".colleagues": "bob@example.com <script>alert(1)</script>"} {
		if got := webtest.Text(doc, sel); got != want {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	// Owners are offered the lead's erasure, with the email filled in; a
	// viewer is not.
	if got, _ := doc.Find("a.erase-lead").Attr("href"); got != "/t/acme/leads/erase?email=ada%40example.com" {
		t.Errorf("erase link %q", got)
	}
	if _, viewerDoc := e.WithRole("viewer@example.com", domain.RoleViewer).Get(href); viewerDoc.Find("a.erase-lead").Length() != 0 {
		t.Error("a viewer is offered to erase the lead")
	}
	if n := doc.Find("table.tasks tbody tr").Length(); n != 1 || !strings.Contains(webtest.Text(doc, "table.tasks"), "open") {
		t.Errorf("tasks: %d rows, %q", n, webtest.Text(doc, "table.tasks"))
	}
	if got := webtest.Text(doc, "table.campaigns tbody"); !strings.Contains(got, "launch") || !strings.Contains(got, "summit") ||
		!strings.Contains(got, "webinar") {
		t.Errorf("campaigns %q", got)
	}
	if doc.Find("main script").Length() != 0 {
		t.Fatal("a colleague's name became a script element")
	}

	if status, _ := b.Get("/t/acme/people/999999"); status != http.StatusNotFound {
		t.Fatalf("unknown person: %d", status)
	}
	if status, _ := b.Get("/t/acme/people/abc"); status != http.StatusNotFound {
		t.Fatalf("non-numeric person: %d", status)
	}

	// Another tenant's member sees neither the list nor the person.
	e.Provider("globex", "crm")
	outsider := e.Operator("globex-ops@example.com", false, "globex")
	if status, _ := outsider.Get("/t/acme/people"); status != http.StatusNotFound {
		t.Fatalf("outsider on acme people: %d", status)
	}
	if status, _ := outsider.Get(href); status != http.StatusNotFound {
		t.Fatalf("outsider on acme person: %d", status)
	}
	// Nor does acme's person show under globex.
	if status, _ := outsider.Get(strings.Replace(href, "/t/acme/", "/t/globex/", 1)); status != http.StatusNotFound {
		t.Fatalf("acme person under globex: %d", status)
	}
}

func TestConsolePeoplePagination(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i := range 3 {
		e.Outcome("acme", "crm", e.Secret, fmt.Sprint("s", i), webtest.SignupBody(fmt.Sprintf("p%d@gmail.com", i), "P", "launch"))
	}
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/people?limit=2")
	next, _ := doc.Find(`a[rel=next]`).Attr("href")
	if status != http.StatusOK || doc.Find("table.people tbody tr").Length() != 2 || next == "" {
		t.Fatalf("first page: %d, %d rows, next %q", status, doc.Find("table.people tbody tr").Length(), next)
	}
	status, doc = b.Get(next)
	if status != http.StatusOK || doc.Find("table.people tbody tr").Length() != 1 || webtest.Text(doc, ".person-link") != "p0@gmail.com" {
		t.Fatalf("second page: %d %q", status, webtest.Text(doc, "table.people"))
	}
	if doc.Find(`a[rel=first]`).Length() != 1 || doc.Find(`a[rel=next]`).Length() != 0 {
		t.Fatal("last page: want a link back to the first page and no next link")
	}
	if status, doc := b.Get("/t/acme/people?cursor=garbage"); status != http.StatusBadRequest || webtest.Text(doc, "[role=alert]") == "" {
		t.Fatalf("bad cursor: %d", status)
	}
}
