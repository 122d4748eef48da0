package people_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// signup ingests a lead.signup of email and name for campaign, received
// at, and returns its outcome.
func signup(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint, id, email, name, campaign string, at time.Time) domain.Outcome {
	t.Helper()
	l, err := domain.NormalizeLead(domain.Lead{Email: email, Name: name, Campaign: campaign})
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(l)
	e := domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"},
		ObjectID: l.Email, Snapshot: snapshot, Payload: snapshot, Lead: &l}
	d := pgtest.Delivery(p)
	d.ReceivedAt = at
	r, err := s.Ingest(context.Background(), d, p, []domain.Event{e})
	if err != nil {
		t.Fatalf("ingest %s: %v", id, err)
	}
	return r[0].Outcome
}

func emails(list domain.PeopleList) string {
	var out []string
	for _, p := range list.People {
		out = append(out, p.Email)
	}
	return strings.Join(out, " ")
}

// TestSearchPeople: a search matches the start of the email, of its domain
// and of a word of the name, whatever the case; LIKE's wildcards are
// plain text; another tenant's people never match.
func TestSearchPeople(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i, l := range []struct{ email, name string }{
		{"ada@northwind.example", "Ada Lindqvist"},
		{"ben@northwind.example", "Ben Okafor"},
		{"carla@example.com", "Carla Northcott"},
		{"dan_x@gmail.com", "Dan"},
	} {
		signup(t, s, p, fmt.Sprint("s", i), l.email, l.name, "launch", base.Add(time.Duration(i)*time.Minute))
	}
	signup(t, s, other, "g1", "zed@northwind.example", "Zed North", "launch", base)

	for q, want := range map[string]string{
		"":           "dan_x@gmail.com carla@example.com ben@northwind.example ada@northwind.example",
		"northwind":  "ben@northwind.example ada@northwind.example",
		"NORTH":      "carla@example.com ben@northwind.example ada@northwind.example", // Northcott by name
		"ada":        "ada@northwind.example",
		" Okafor ":   "ben@northwind.example",
		"lindq":      "ada@northwind.example",
		"carla@ex":   "carla@example.com",
		"example":    "carla@example.com",
		"dan_":       "dan_x@gmail.com",
		"da_":        "",
		"%":          "",
		"wind":       "",
		"zed":        "",
		"nobody@x.y": "",
	} {
		list, err := s.SearchPeople(ctx, p.TenantID, q, domain.Page{Limit: 10})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if got := emails(list); got != want {
			t.Errorf("%q found %q, want %q", q, got, want)
		}
		if n := len(strings.Fields(want)); list.Total != n || list.Ahead != 0 || list.Older != "" || list.Newer != "" {
			t.Errorf("%q: total %d ahead %d older %q newer %q; want %d, 0 and no pages", q, list.Total, list.Ahead, list.Older, list.Newer, n)
		}
	}
	list, err := s.SearchPeople(ctx, other.TenantID, "", domain.Page{Limit: 10})
	if err != nil || emails(list) != "zed@northwind.example" || list.Total != 1 {
		t.Fatalf("globex sees %q (%d, %v), want its own person alone", emails(list), list.Total, err)
	}
}

// TestSearchPeoplePages: pages go older with Cursor and back newer with
// Before, each full, with the count and the position of the page.
func TestSearchPeoplePages(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	for i := range 5 {
		signup(t, s, p, fmt.Sprint("s", i), fmt.Sprintf("p%d@gmail.com", i), "P", "launch", base.Add(time.Duration(i)*time.Minute))
	}
	page := func(pg domain.Page) domain.PeopleList {
		t.Helper()
		pg.Limit = 2
		list, err := s.SearchPeople(ctx, p.TenantID, "p", pg)
		if err != nil {
			t.Fatal(err)
		}
		if list.Total != 5 {
			t.Fatalf("total %d, want 5", list.Total)
		}
		return list
	}
	first := page(domain.Page{})
	if emails(first) != "p4@gmail.com p3@gmail.com" || first.Newer != "" || first.Older == "" || first.Ahead != 0 {
		t.Fatalf("first page %q newer %q older %q ahead %d", emails(first), first.Newer, first.Older, first.Ahead)
	}
	second := page(domain.Page{Cursor: first.Older})
	if emails(second) != "p2@gmail.com p1@gmail.com" || second.Newer == "" || second.Older == "" || second.Ahead != 2 {
		t.Fatalf("second page %q newer %q older %q ahead %d", emails(second), second.Newer, second.Older, second.Ahead)
	}
	last := page(domain.Page{Cursor: second.Older})
	if emails(last) != "p0@gmail.com" || last.Older != "" || last.Newer == "" || last.Ahead != 4 {
		t.Fatalf("last page %q newer %q older %q ahead %d", emails(last), last.Newer, last.Older, last.Ahead)
	}
	back := page(domain.Page{Before: last.Newer})
	if emails(back) != "p2@gmail.com p1@gmail.com" || back.Newer == "" || back.Older == "" || back.Ahead != 2 {
		t.Fatalf("back from the last page %q newer %q older %q ahead %d", emails(back), back.Newer, back.Older, back.Ahead)
	}
	top := page(domain.Page{Before: back.Newer})
	if emails(top) != "p4@gmail.com p3@gmail.com" || top.Newer != "" || top.Older == "" {
		t.Fatalf("back to the top %q newer %q older %q", emails(top), top.Newer, top.Older)
	}
	// Before a page whose newer rows are fewer than a page: the newest page.
	top = page(domain.Page{Before: second.Newer})
	if emails(top) != "p4@gmail.com p3@gmail.com" || top.Newer != "" {
		t.Fatalf("before the second page %q newer %q", emails(top), top.Newer)
	}
	for _, bad := range []domain.Page{{Cursor: "garbage"}, {Before: "garbage"}} {
		if _, err := s.SearchPeople(ctx, p.TenantID, "", bad); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", bad, err)
		}
	}
}

// TestLeadSignups: every signup of a lead with its real outcome, newest
// first, of one provider or all of them, and nothing of another tenant;
// the person is dated by their first signup's receipt, as the campaign
// membership is.
func TestLeadSignups(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	forms := pgtest.Provider(t, s, "acme", "forms")
	other := pgtest.Provider(t, s, "globex", "crm")
	ctx := context.Background()
	base := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	outcomes := []domain.Outcome{
		signup(t, s, p, "signup-01", "ada@northwind.example", "Ada", "webinar", base),
		signup(t, s, p, "signup-03", "Ada@Northwind.example", "Ada", "webinar", base.Add(time.Hour)),
		signup(t, s, forms, "signup-06", "ada@northwind.example", "Ada", "pricing", base.Add(2*time.Hour)),
		signup(t, s, p, "signup-07", "ben@northwind.example", "Ben", "webinar", base.Add(2*time.Hour)),
		signup(t, s, other, "g-1", "ada@northwind.example", "Ada", "webinar", base),
	}
	if want := []domain.Outcome{domain.Applied, domain.Redundant, domain.Applied, domain.Applied, domain.Applied}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	describe := func(es []domain.LoggedEvent) string {
		var out []string
		for _, e := range es {
			out = append(out, e.EventID+":"+e.Provider+":"+string(e.Outcome))
		}
		return strings.Join(out, " ")
	}
	all, err := s.LeadSignups(ctx, p.TenantID, "", "ADA@northwind.example", 10)
	if err != nil || describe(all) != "signup-06:forms:applied signup-03:crm:redundant signup-01:crm:applied" {
		t.Fatalf("all providers: %q, %v", describe(all), err)
	}
	if all[0].DeliveryID == "" || all[0].ObjectID != "ada@northwind.example" || !all[2].ReceivedAt.Equal(base) {
		t.Fatalf("first signup %+v", all[2])
	}
	crm, err := s.LeadSignups(ctx, p.TenantID, "crm", "ada@northwind.example", 1)
	if err != nil || describe(crm) != "signup-03:crm:redundant" {
		t.Fatalf("crm, limit 1: %q, %v", describe(crm), err)
	}
	if _, err := s.LeadSignups(ctx, p.TenantID, "nope", "ada@northwind.example", 10); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("unknown provider: %v", err)
	}
	if got, err := s.LeadSignups(ctx, other.TenantID, "", "ada@northwind.example", 10); err != nil || describe(got) != "g-1:crm:applied" {
		t.Fatalf("globex: %q, %v", describe(got), err)
	}

	people, _, err := s.People(ctx, p.TenantID, "ada@northwind.example", domain.Page{})
	if err != nil || len(people) != 1 {
		t.Fatalf("ada: %v, %v", people, err)
	}
	ada := people[0]
	if !ada.CreatedAt.Equal(base) || len(ada.Tasks) != 1 || !ada.Tasks[0].CreatedAt.Equal(base) ||
		len(ada.Campaigns) != 2 || !ada.Campaigns[0].JoinedAt.Equal(base) {
		t.Fatalf("ada created %v, task %+v, campaigns %+v; want all dated by the first signup %v", ada.CreatedAt, ada.Tasks, ada.Campaigns, base)
	}
}
