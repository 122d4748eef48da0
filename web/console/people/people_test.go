package people_test

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
	if got := strings.Join(cells, " | "); got != "ada@example.com | Ada | example.com | 1 | launch, summit | "+ada.Find("time").Text() {
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

// TestLeadPageListsSignups: a lead's record page lists every signup of its
// email with its real outcome, as the event history does, says how many
// applied, links each to its event and the lead to the person; the person
// page links back to the same signups.
func TestLeadPageListsSignups(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for _, s := range []struct{ id, email, campaign, want string }{
		{"signup-01", "ada@northwind.example", "webinar-dec", "applied"},
		{"signup-02", "ben@northwind.example", "webinar-dec", "applied"},
		{"signup-03", "ADA@northwind.example", "webinar-dec", "redundant"},
		{"signup-06", "ada@northwind.example", "pricing-guide", "applied"},
	} {
		if got := e.Outcome("acme", "crm", e.Secret, s.id, webtest.SignupBody(s.email, "Ada Lindqvist", s.campaign)); got != s.want {
			t.Fatalf("%s: %s, want %s", s.id, got, s.want)
		}
	}
	b := e.Operator("ops@example.com", false, "acme")

	// The event history links the lead to its record page.
	_, doc := b.Get("/t/acme/events?outcome=applied")
	lead, _ := doc.Find(`a.record-link:contains("ada@northwind.example")`).First().Attr("href")
	if lead != "/t/acme/records/crm/lead/ada@northwind.example" {
		t.Fatalf("event history links the lead to %q", lead)
	}
	status, doc := b.Get(lead)
	if status != http.StatusOK {
		t.Fatalf("lead page: %d", status)
	}
	var rows []string
	doc.Find("table.lead-signups tbody tr").Each(func(_ int, tr *goquery.Selection) {
		id, _ := tr.Attr("data-event")
		rows = append(rows, id+":"+strings.TrimSpace(tr.Find(".badge").Text()))
	})
	if got := strings.Join(rows, " "); got != "signup-06:applied signup-03:redundant signup-01:applied" {
		t.Fatalf("lead signups %q, want all three newest first with their outcomes", got)
	}
	if got := webtest.Text(doc, ".lead-summary"); got != "3 signups arrived; 2 applied." {
		t.Fatalf("summary %q", got)
	}
	if strings.Contains(doc.Find("main").Text(), "was ever accepted") {
		t.Fatal("the lead page still says no snapshot was accepted")
	}
	events := doc.Find("table.lead-signups tbody tr .event-id a")
	href, _ := events.First().Attr("href")
	if events.Length() != 3 || !strings.HasPrefix(href, "/t/acme/events/") {
		t.Fatalf("%d event links, first %q", events.Length(), href)
	}
	if status, event := b.Get(href); status != http.StatusOK || !strings.Contains(event.Find("main").Text(), "signup-06") {
		t.Fatalf("event link %s: %d", href, status)
	}
	person, _ := doc.Find(".lead-state a.person-link").Attr("href")
	if !strings.HasPrefix(person, "/t/acme/people/") {
		t.Fatalf("lead page links the person at %q", person)
	}

	status, doc = b.Get(person)
	if status != http.StatusOK || webtest.Text(doc, ".person-email") != "ada@northwind.example" {
		t.Fatalf("person page %s: %d %q", person, status, webtest.Text(doc, ".person-email"))
	}
	rows = nil
	doc.Find("table.lead-signups tbody tr").Each(func(_ int, tr *goquery.Selection) {
		id, _ := tr.Attr("data-event")
		link, _ := tr.Find(".event-id a").Attr("href")
		rows = append(rows, id+":"+tr.AttrOr("data-outcome", "")+":"+fmt.Sprint(strings.HasPrefix(link, "/t/acme/events/")))
	})
	if got := strings.Join(rows, " "); got != "signup-06:applied:true signup-03:redundant:true signup-01:applied:true" {
		t.Fatalf("person signups %q", got)
	}

	// An unknown provider or a lead nobody signed up as is not found, and
	// another workspace sees nothing of this one's lead.
	for _, path := range []string{"/t/acme/records/nope/lead/ada@northwind.example", "/t/acme/records/crm/lead/nobody@example.com"} {
		if status, _ := b.Get(path); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, status)
		}
	}
	e.Provider("globex", "crm")
	if status, _ := e.Operator("globex-ops@example.com", false, "globex").Get("/t/globex/records/crm/lead/ada@northwind.example"); status != http.StatusNotFound {
		t.Errorf("globex sees acme's lead: %d", status)
	}
}

// TestPeopleSearchPrefixAndName: the search finds people by the start of
// their email's domain and of their name, says how many, and pages both
// ways.
func TestPeopleSearchPrefixAndName(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i, s := range []struct{ email, name string }{
		{"ada@northwind.example", "Ada Lindqvist"},
		{"ben@northwind.example", "Ben Okafor"},
		{"cy@contoso.example", "Cy Northcott"},
		{"dee@contoso.example", "Dee"},
	} {
		e.Outcome("acme", "crm", e.Secret, fmt.Sprint("s", i), webtest.SignupBody(s.email, s.name, "launch"))
	}
	b := e.Operator("ops@example.com", false, "acme")
	found := func(doc *goquery.Document) string {
		var out []string
		doc.Find("table.people .person-link").Each(func(_ int, a *goquery.Selection) { out = append(out, a.Text()) })
		return strings.Join(out, " ")
	}
	for q, want := range map[string]string{
		"northwind": "ben@northwind.example ada@northwind.example",
		"North":     "cy@contoso.example ben@northwind.example ada@northwind.example",
		"okafor":    "ben@northwind.example",
		"ada@":      "ada@northwind.example",
	} {
		status, doc := b.Get("/t/acme/people?q=" + url.QueryEscape(q))
		if status != http.StatusOK || found(doc) != want {
			t.Errorf("%q: %d found %q, want %q", q, status, found(doc), want)
		}
		if n := len(strings.Fields(want)); webtest.Text(doc, ".pager .count") != fmt.Sprintf("1–%d of %d", n, n) {
			t.Errorf("%q: count %q", q, webtest.Text(doc, ".pager .count"))
		}
		if got, _ := doc.Find(`input[name=q]`).Attr("value"); got != q {
			t.Errorf("%q: the search box holds %q", q, got)
		}
	}
	_, doc := b.Get("/t/acme/people?q=wind")
	if found(doc) != "" || !strings.Contains(webtest.Text(doc, ".empty"), "wind") {
		t.Errorf("wind: %q %q", found(doc), webtest.Text(doc, ".empty"))
	}

	// One a page: older, older, then newer back, and the newest.
	_, doc = b.Get("/t/acme/people?q=north&limit=1")
	if found(doc) != "cy@contoso.example" || webtest.Text(doc, ".pager .count") != "1–1 of 3" || doc.Find("a[rel=prev]").Length() != 0 {
		t.Fatalf("first page %q %q", found(doc), webtest.Text(doc, ".pager .count"))
	}
	older, _ := doc.Find("a[rel=next]").Attr("href")
	_, doc = b.Get(older)
	older, _ = doc.Find("a[rel=next]").Attr("href")
	_, doc = b.Get(older)
	if found(doc) != "ada@northwind.example" || webtest.Text(doc, ".pager .count") != "3–3 of 3" || doc.Find("a[rel=next]").Length() != 0 {
		t.Fatalf("last page %q %q", found(doc), webtest.Text(doc, ".pager .count"))
	}
	newer, _ := doc.Find("a[rel=prev]").Attr("href")
	if !strings.Contains(newer, "q=north") || !strings.Contains(newer, "limit=1") {
		t.Fatalf("newer link %q keeps neither the search nor the page size", newer)
	}
	_, doc = b.Get(newer)
	if found(doc) != "ben@northwind.example" || webtest.Text(doc, ".pager .count") != "2–2 of 3" {
		t.Fatalf("back newer %q %q", found(doc), webtest.Text(doc, ".pager .count"))
	}
	newest, _ := doc.Find("a[rel=first]").Attr("href")
	if _, doc = b.Get(newest); found(doc) != "cy@contoso.example" {
		t.Fatalf("newest %q", found(doc))
	}
	if status, _ := b.Get("/t/acme/people?before=garbage"); status != http.StatusBadRequest {
		t.Fatalf("bad before: %d", status)
	}
}

// TestPersonCardMarkup: each card of the person page opens with its
// heading, then its table; neither card takes a class the top bar styles.
func TestPersonCardMarkup(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "s1", webtest.SignupBody("ada@northwind.example", "Ada", "launch"))
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/people")
	href, _ := doc.Find("a.person-link").Attr("href")
	_, doc = b.Get(href)
	cards := doc.Find(".person-detail > section.card")
	if cards.Length() != 2 {
		t.Fatalf("%d cards", cards.Length())
	}
	cards.Each(func(i int, card *goquery.Selection) {
		kids := card.Children()
		if goquery.NodeName(kids.Eq(0)) != "h2" || goquery.NodeName(kids.Eq(1)) != "table" {
			t.Errorf("card %d: children %s, %s; want the heading, then the table", i, goquery.NodeName(kids.Eq(0)), goquery.NodeName(kids.Eq(1)))
		}
		if card.HasClass("account") || card.HasClass("person") {
			t.Errorf("card %d has class %q, which other rules style", i, card.AttrOr("class", ""))
		}
	})
	if got := webtest.Text(doc, ".account-card h2"); got != "Account" {
		t.Errorf("account heading %q", got)
	}
	if got := doc.Find(".person-created time").Text(); !strings.HasSuffix(got, " UTC") || len(got) != len("2006-01-02 15:04 UTC") {
		t.Errorf("created %q, want the day and the time", got)
	}
}
