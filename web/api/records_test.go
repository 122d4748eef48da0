package api_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// recordsAPI indexes what was delivered (as serve does every couple of
// seconds) and lists the tenant's records for query.
func recordsAPI(t *testing.T, e *webtest.Env, d webtest.APIData, query string) (keys []string, items []map[string]any, next any) {
	t.Helper()
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, body := e.Get(d.Base+"/records?"+query, d.Token)
	items = webtest.List(t, status, body, "records")
	for _, it := range items {
		keys = append(keys, it["provider"].(string)+"/"+it["object_type"].(string)+"/"+it["object_id"].(string))
	}
	return keys, items, body["next_cursor"]
}

func TestAPIRecords(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	// Another tenant with the same ids and words shows in no answer of acme.
	globex := webtest.APIData{Tenant: "globex", Provider: "crm", Secret: e.Provider("globex", "crm"), Token: e.Token("globex"),
		Base: "/api/v1/tenants/globex"}
	webtest.APISeed(t, e, &globex, "g-")

	keys, items, next := recordsAPI(t, e, d, "")
	if want := []string{"crm/deal/d-1", "crm/contact/c-1"}; !slices.Equal(keys, want) || next != nil {
		t.Fatalf("records %v (next %v), want %v", keys, next, want)
	}
	webtest.AssertKeys(t, items[1], "provider", "object_type", "object_id", "revision", "updated_at", "application_count",
		"open_conflicts", "stale_events_7d", "deleted", "headline")
	assertTime(t, items[1], "updated_at")
	for key, want := range map[string]any{"revision": 12.0, "application_count": 2.0, "open_conflicts": 1.0,
		"stale_events_7d": 1.0, "deleted": false, "headline": nil} {
		if items[1][key] != want {
			t.Errorf("c-1 %s = %v, want %v", key, items[1][key], want)
		}
	}
	if items[0]["open_conflicts"] != 0.0 || items[0]["stale_events_7d"] != 0.0 {
		t.Errorf("d-1 has badges: %v", items[0])
	}

	for query, want := range map[string][]string{
		"conflicts=open":                        {"crm/contact/c-1"},
		"object_type=deal":                      {"crm/deal/d-1"},
		"provider=crm&object_type=contact":      {"crm/contact/c-1"},
		"provider=other":                        nil,
		"q=customer":                            {"crm/contact/c-1"},
		"q=" + url.QueryEscape("A12 -customer"): nil,
		"q=" + url.QueryEscape(`"lead"`):        nil, // c-1's current snapshot no longer says lead
		"q=d-":                                  {"crm/deal/d-1"},
		"q=" + url.QueryEscape("!?"):            nil,
		"q=%20":                                 {"crm/deal/d-1", "crm/contact/c-1"},
		"from=2000-01-01T00:00:00Z&before=2000-01-02T00:00:00Z": nil,
		"from=2000-01-01T00:00:00Z":                             {"crm/deal/d-1", "crm/contact/c-1"},
	} {
		if got, _, _ := recordsAPI(t, e, d, query); !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", query, got, want)
		}
	}

	_, items, _ = recordsAPI(t, e, d, "q=a12")
	if h, _ := items[0]["headline"].(string); !strings.Contains(h, "\u0002A12\u0003") {
		t.Errorf("headline %q does not mark A12", items[0]["headline"])
	}

	keys, _, next = recordsAPI(t, e, d, "limit=1")
	cursor, _ := next.(string)
	if cursor == "" || !slices.Equal(keys, []string{"crm/deal/d-1"}) {
		t.Fatalf("first page %v, next %v", keys, next)
	}
	if keys, _, next = recordsAPI(t, e, d, "limit=1&cursor="+url.QueryEscape(cursor)); !slices.Equal(keys, []string{"crm/contact/c-1"}) || next != nil {
		t.Errorf("second page %v, next %v", keys, next)
	}

	// A reset record has no revision until its next event, as its own
	// answer says.
	ref := domain.RecordRef{Provider: "crm", ObjectType: domain.ContactType, ObjectID: "c-1"}
	if _, err := e.Store.ResetRecord(webtest.CliContext(), e.Tenant("acme").ID, ref); err != nil {
		t.Fatal(err)
	}
	if _, items, _ = recordsAPI(t, e, d, "q=c-1"); len(items) != 1 || items[0]["revision"] != nil {
		t.Errorf("reset c-1: %v", items)
	}

	for query, msg := range map[string]string{
		"conflicts=yes":     `conflicts must be "open"`,
		"from=yesterday":    "from must be an RFC 3339 time",
		"before=2026-13-01": "before must be an RFC 3339 time",
		"from=2026-01-02T00:00:00Z&before=2026-01-01T00:00:00Z": "start of the time range must be before its end",
		"q=" + strings.Repeat("a", 201):                         "search for at most 200",
		"limit=0":                                               "limit must be a positive integer",
		"cursor=bm90LWpzb24":                                    "invalid cursor",
	} {
		status, body := e.Get(d.Base+"/records?"+query, d.Token)
		webtest.AssertError(t, status, body, http.StatusBadRequest, msg)
	}
}

func TestAPIEventsSearch(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string][]string{
		"q=A12":                              {"evt-12"},
		"q=" + url.QueryEscape("a12 or b12"): {"evt-12b", "evt-12"},
		"q=" + url.QueryEscape("customer or lead"): {"evt-12", "evt-10"},
		"q=lead&outcome=applied&contact_id=c-1":    {"evt-10"},
		"q=" + url.QueryEscape("a11 -a11"):         nil,
		"q=" + url.QueryEscape("()"):               nil,
	} {
		status, body := e.Get(d.Base+"/events?"+query, d.Token)
		var got []string
		for _, ev := range webtest.List(t, status, body, "events") {
			got = append(got, ev["event_id"].(string))
			if h, _ := ev["headline"].(string); !strings.ContainsRune(h, '\u0002') {
				t.Errorf("?%s: %s has headline %q", query, ev["event_id"], ev["headline"])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", query, got, want)
		}
	}
	status, body := e.Get(d.Base+"/events?outcome=applied", d.Token)
	for _, ev := range webtest.List(t, status, body, "events") {
		if _, ok := ev["headline"]; ok {
			t.Errorf("without q, event %s has a headline", ev["event_id"])
		}
	}
	status, body = e.Get(d.Base+"/events?q=a%02b", d.Token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "control characters")
}
