package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// signupBody is a standard lead.signup delivery body.
func signupBody(email, name, campaign string) []byte {
	data, _ := json.Marshal(map[string]string{"email": email, "name": name, "company": "Example",
		"campaign": campaign, "source": "webinar"})
	return []byte(`{"type":"lead.signup","data":` + string(data) + `}`)
}

func TestPeopleSignupsOverHTTP(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	body := []byte(`{"type":"lead.signup","data":{"email":"Ada@Example.com","name":"Ada","company":"Example","campaign":"launch","source":"webinar"}}`)
	if status, answer := e.Deliver1("s1", body); webtest.Outcome(t, status, answer) != "applied" {
		t.Fatalf("first signup: %v, want applied", answer)
	}
	if status, answer := e.Deliver1("s2", body); webtest.Outcome(t, status, answer) != "redundant" {
		t.Fatalf("second signup of the same person and campaign: %v, want redundant", answer)
	}
	status, answer := e.Deliver1("s3", signupBody("not-an-email", "X", "launch"))
	if got := webtest.Outcome(t, status, answer); got != "rejected" {
		t.Fatalf("invalid email: %q, want rejected", got)
	}
	if reason, _ := answer["results"].([]any)[0].(map[string]any)["reason"].(string); !strings.Contains(reason, "email") {
		t.Fatalf("invalid email reason %q", reason)
	}

	tok := e.Token("acme")
	status, got := e.Get("/api/v1/tenants/acme/people?email="+url.QueryEscape(" ADA@example.COM "), tok)
	if status != http.StatusOK {
		t.Fatalf("people?email= answered %d %v", status, got)
	}
	people := got["people"].([]any)
	if len(people) != 1 {
		t.Fatalf("people %v, want one", got)
	}
	taskID := people[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["id"]
	want := map[string]any{"people": []any{map[string]any{
		"email": "ada@example.com", "name": "Ada",
		"account":   map[string]any{"domain": "example.com", "name": "Example"},
		"tasks":     []any{map[string]any{"id": taskID, "status": "open"}},
		"campaigns": []any{"launch"},
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("people?email=\n got %v\nwant %v", got, want)
	}
	if _, ok := taskID.(float64); !ok {
		t.Fatalf("task id %v is not a number", taskID)
	}
	status, got = e.Get("/api/v1/tenants/acme/people?email=nobody@example.com", tok)
	if status != http.StatusOK || len(got["people"].([]any)) != 0 {
		t.Fatalf("unknown email: %d %v, want an empty list", status, got)
	}
}

func TestPeopleAPIListPaginationAndIsolation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i := range 5 {
		email := fmt.Sprintf("p%d@gmail.com", i)
		if got := e.Outcome("acme", "crm", e.Secret, fmt.Sprint("s", i), signupBody(email, "P", "launch")); got != "applied" {
			t.Fatalf("signup %d: %s", i, got)
		}
	}
	gsecret := e.Provider("globex", "crm")
	if got := e.Outcome("globex", "crm", gsecret, "g1", signupBody("secret@globex.com", "G", "x")); got != "applied" {
		t.Fatalf("globex signup: %s", got)
	}
	tok := e.Token("acme")
	var emails []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		path := "/api/v1/tenants/acme/people?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, got := e.Get(path, tok)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", path, status, got)
		}
		for _, p := range got["people"].([]any) {
			person := p.(map[string]any)
			if person["account"] != nil {
				t.Fatalf("free-mail person has account %v", person["account"])
			}
			emails = append(emails, person["email"].(string))
		}
		next, _ := got["next_cursor"].(string)
		if next == "" {
			if _, ok := got["next_cursor"]; !ok {
				t.Fatalf("list answer has no next_cursor: %v", got)
			}
			break
		}
		cursor = next
	}
	want := []string{"p4@gmail.com", "p3@gmail.com", "p2@gmail.com", "p1@gmail.com", "p0@gmail.com"}
	if !reflect.DeepEqual(emails, want) {
		t.Fatalf("people %v, want newest first %v", emails, want)
	}
	if status, got := e.Get("/api/v1/tenants/acme/people?cursor=garbage", tok); status != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d %v", status, got)
	}
	if status, got := e.Get("/api/v1/tenants/acme/people?email=secret@globex.com", tok); status != http.StatusOK || len(got["people"].([]any)) != 0 {
		t.Fatalf("acme token sees globex person: %d %v", status, got)
	}
	gtok := e.Token("globex")
	if status, _ := e.Get("/api/v1/tenants/acme/people", gtok); status != http.StatusNotFound {
		t.Fatalf("globex token on acme people: %d, want 404", status)
	}
	if status, got := e.Get("/api/v1/tenants/globex/people", gtok); status != http.StatusOK || len(got["people"].([]any)) != 1 {
		t.Fatalf("globex people: %d %v", status, got)
	}
}

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

	e.Outcome("acme", "crm", e.Secret, "s1", signupBody("Ada@Example.com", "Ada", "launch"))
	e.Outcome("acme", "crm", e.Secret, "s2", signupBody("ada@example.com", "Ada", "summit"))
	e.Outcome("acme", "crm", e.Secret, "s3", signupBody("bob@example.com", "<script>alert(1)</script>", "launch"))

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
		e.Outcome("acme", "crm", e.Secret, fmt.Sprint("s", i), signupBody(fmt.Sprintf("p%d@gmail.com", i), "P", "launch"))
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
