package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func assertJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("%s = %v, want %s", what, got, want)
	}
}

func assertTime(t *testing.T, m map[string]any, key string) {
	t.Helper()
	s, _ := m[key].(string)
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		t.Fatalf("%s = %v, want an RFC 3339 time", key, m[key])
	}
}

func TestAPIContact(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/contacts/crm/c-1", d.Token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	webtest.AssertKeys(t, body, "contact_id", "provider", "revision", "snapshot", "application_count", "last_applied_event", "updated_at")
	assertJSON(t, "contact", map[string]any{"contact_id": body["contact_id"], "provider": body["provider"],
		"revision": body["revision"], "snapshot": body["snapshot"], "application_count": body["application_count"],
		"last_applied_event": body["last_applied_event"]},
		`{"contact_id":"c-1","provider":"crm","revision":12,"snapshot":{"company":"A12","lead_status":"customer"},
		  "application_count":2,"last_applied_event":"evt-12"}`)
	assertTime(t, body, "updated_at")

	for _, path := range []string{"/contacts/crm/nobody", "/contacts/nope/c-1", "/contacts/crm/c-2", "/contacts/crm/d-1"} {
		status, body := e.Get(d.Base+path, d.Token)
		webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	}
}

func TestAPIRecord(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/records/crm/deal/d-1", d.Token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	webtest.AssertKeys(t, body, "provider", "object_type", "object_id", "revision", "snapshot", "application_count",
		"last_applied_event", "created_at", "updated_at", "deleted", "deleted_revision", "reset_at")
	assertJSON(t, "deal", map[string]any{"provider": body["provider"], "object_type": body["object_type"],
		"object_id": body["object_id"], "revision": body["revision"], "snapshot": body["snapshot"],
		"application_count": body["application_count"], "last_applied_event": body["last_applied_event"]},
		`{"provider":"crm","object_type":"deal","object_id":"d-1","revision":1,"snapshot":{"amount":100},
		  "application_count":1,"last_applied_event":"evt-d1"}`)
	assertTime(t, body, "created_at")
	assertTime(t, body, "updated_at")

	// Contacts are records too.
	status, body = e.Get(d.Base+"/records/crm/contact/c-1", d.Token)
	if status != http.StatusOK || body["revision"] != 12.0 || body["object_id"] != "c-1" {
		t.Fatalf("contact as record: %d %v", status, body)
	}
	status, body = e.Get(d.Base+"/records/crm/contact/d-1", d.Token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
}

func TestAPIRevisions(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/contacts/crm/c-1/revisions", d.Token)
	revs := webtest.List(t, status, body, "revisions")
	if body["next_cursor"] != nil {
		t.Fatalf("next_cursor %v on the only page", body["next_cursor"])
	}
	if len(revs) != 2 {
		t.Fatalf("revisions %v, want 12 and 10", revs)
	}
	for _, r := range revs {
		webtest.AssertKeys(t, r, "revision", "event_id", "snapshot", "applied_at", "conflict_id")
		assertTime(t, r, "applied_at")
		delete(r, "applied_at")
	}
	assertJSON(t, "revisions", []any{revs[0], revs[1]},
		`[{"revision":12,"event_id":"evt-12","snapshot":{"company":"A12","lead_status":"customer"},"conflict_id":null},
		  {"revision":10,"event_id":"evt-10","snapshot":{"company":"A10","lead_status":"lead"},"conflict_id":null}]`)

	// One per page.
	status, body = e.Get(d.Base+"/contacts/crm/c-1/revisions?limit=1", d.Token)
	page1 := webtest.List(t, status, body, "revisions")
	cursor, _ := body["next_cursor"].(string)
	if len(page1) != 1 || page1[0]["revision"] != 12.0 || cursor == "" {
		t.Fatalf("page 1: %v", body)
	}
	status, body = e.Get(d.Base+"/contacts/crm/c-1/revisions?limit=1&cursor="+url.QueryEscape(cursor), d.Token)
	page2 := webtest.List(t, status, body, "revisions")
	if len(page2) != 1 || page2[0]["revision"] != 10.0 || body["next_cursor"] != nil {
		t.Fatalf("page 2: %v", body)
	}

	status, body = e.Get(d.Base+"/contacts/crm/nobody/revisions", d.Token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	status, body = e.Get(d.Base+"/contacts/crm/c-1/revisions?cursor=%25%25", d.Token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "invalid cursor")
}

func TestAPIEvents(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/events", d.Token)
	events := webtest.List(t, status, body, "events")
	if body["next_cursor"] != nil {
		t.Fatalf("next_cursor %v on the only page", body["next_cursor"])
	}
	var ids []string
	for _, ev := range events {
		webtest.AssertKeys(t, ev, "event_id", "provider", "contact_id", "revision", "outcome", "received_at", "reason",
			"object_type", "object_id", "delivery_id")
		assertTime(t, ev, "received_at")
		if id, _ := ev["delivery_id"].(string); len(id) != 36 {
			t.Fatalf("delivery_id %v, want a UUID", ev["delivery_id"])
		}
		ids = append(ids, ev["event_id"].(string))
	}
	if want := []string{"evt-nr", "evt-d1", "evt-12b", "evt-11", "evt-12", "evt-10"}; !slices.Equal(ids, want) {
		t.Fatalf("events %v, want newest first %v", ids, want)
	}
	byID := map[string]map[string]any{}
	for _, ev := range events {
		delete(ev, "received_at")
		delete(ev, "delivery_id")
		byID[ev["event_id"].(string)] = ev
	}
	assertJSON(t, "evt-12", byID["evt-12"], `{"event_id":"evt-12","provider":"crm","contact_id":"c-1","revision":12,
		"outcome":"applied","reason":null,"object_type":"contact","object_id":"c-1"}`)
	assertJSON(t, "evt-d1", byID["evt-d1"], `{"event_id":"evt-d1","provider":"crm","contact_id":null,"revision":1,
		"outcome":"applied","reason":null,"object_type":"deal","object_id":"d-1"}`)
	if byID["evt-nr"]["revision"] != nil || byID["evt-nr"]["reason"] == nil || byID["evt-11"]["reason"] == nil {
		t.Fatalf("unversioned %v / stale %v: want a null revision and reasons", byID["evt-nr"], byID["evt-11"])
	}

	filters := map[string][]string{
		"contact_id=c-1":                        {"evt-12b", "evt-11", "evt-12", "evt-10"},
		"contact_id=c-1&outcome=stale":          {"evt-11"},
		"outcome=revision_conflict":             {"evt-12b"},
		"object_type=deal":                      {"evt-d1"},
		"object_type=deal&object_id=d-1":        {"evt-d1"},
		"object_type=contact&object_id=d-1":     nil,
		"provider=crm&outcome=unversioned":      {"evt-nr"},
		"provider=other":                        nil,
		"contact_id=c-1&object_type=contact":    {"evt-12b", "evt-11", "evt-12", "evt-10"},
		"limit=1000&outcome=applied":            {"evt-d1", "evt-12", "evt-10"},
		"provider=crm&contact_id=c-2":           {"evt-nr"},
		"contact_id=c-1&outcome=event_conflict": nil,
	}
	for query, want := range filters {
		status, body := e.Get(d.Base+"/events?"+query, d.Token)
		var got []string
		for _, ev := range webtest.List(t, status, body, "events") {
			got = append(got, ev["event_id"].(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", query, got, want)
		}
	}

	status, body = e.Get(d.Base+"/events?outcome=bogus", d.Token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "applied, duplicate, event_conflict, stale, redundant, revision_conflict, unversioned, rejected")
	for _, q := range []string{"limit=0", "limit=-1", "limit=abc", "limit=1.5", "cursor=bm90LWpzb24", "cursor=e30",
		"contact_id=c-1&object_type=deal"} {
		status, body := e.Get(d.Base+"/events?"+q, d.Token)
		if status != http.StatusBadRequest {
			t.Errorf("?%s: status %d (%v), want 400", q, status, body)
		}
	}
}

func TestAPIPagination(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	// A second conflict so that the conflict list has pages too.
	status, body := e.Deliver(d.Tenant, d.Provider, d.Secret, "evt-12c", webtest.SnapshotBody("c-1", 12, `{"company":"C12"}`))
	if got := webtest.Outcome(t, status, body); got != "revision_conflict" {
		t.Fatalf("evt-12c: %s", got)
	}
	for _, c := range []struct {
		path, name, key string
		want            []any
	}{
		{"/events", "events", "event_id", []any{"evt-12c", "evt-nr", "evt-d1", "evt-12b", "evt-11", "evt-12", "evt-10"}},
		{"/events?contact_id=c-1", "events", "event_id", []any{"evt-12c", "evt-12b", "evt-11", "evt-12", "evt-10"}},
		{"/conflicts", "conflicts", "id", []any{float64(d.ConflictID + 1), float64(d.ConflictID)}},
		{"/contacts/crm/c-1/revisions", "revisions", "revision", []any{12.0, 10.0}},
	} {
		var got []any
		cursor, pages := "", 0
		for {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			path := c.path + sep + "limit=2"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			status, body := e.Get(d.Base+path, d.Token)
			items := webtest.List(t, status, body, c.name)
			pages++
			for _, it := range items {
				got = append(got, it[c.key])
			}
			if body["next_cursor"] == nil {
				break
			}
			if len(items) != 2 {
				t.Fatalf("%s page %d has %d items and a next cursor", c.path, pages, len(items))
			}
			cursor = body["next_cursor"].(string)
			if pages > 10 {
				t.Fatalf("%s: no last page", c.path)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s walked %v, want %v", c.path, got, c.want)
		}
		if wantPages := (len(c.want) + 1) / 2; pages != wantPages {
			t.Errorf("%s: %d pages, want %d", c.path, pages, wantPages)
		}
	}
}

func TestAPIStats(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Get(d.Base+"/stats", d.Token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	webtest.AssertKeys(t, body, "outcomes")
	want := `{"applied":3,"duplicate":0,"event_conflict":0,"stale":1,"redundant":0,"revision_conflict":1,"unversioned":1,"rejected":0}`
	assertJSON(t, "outcomes", body["outcomes"], want)

	status, body = e.Get(d.Base+"/stats?provider=crm", d.Token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertJSON(t, "outcomes of crm", body["outcomes"], want)

	// A provider with no events lists every outcome at zero.
	e.Provider("acme", "quiet")
	status, body = e.Get(d.Base+"/stats?provider=quiet", d.Token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertJSON(t, "outcomes of quiet", body["outcomes"],
		`{"applied":0,"duplicate":0,"event_conflict":0,"stale":0,"redundant":0,"revision_conflict":0,"unversioned":0,"rejected":0}`)

	status, body = e.Get(d.Base+"/stats?provider=nope", d.Token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
}
