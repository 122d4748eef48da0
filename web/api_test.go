package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// apiData is a tenant's worth of API fixtures: contact c-1 received
// revisions 10, 12, 11 (stale) and then 12 again with another snapshot,
// which opened a conflict; deal d-1 is at revision 1; contact c-2 sent an
// event without a revision.
type apiData struct {
	tenant, provider, secret, token string
	base                            string // /api/v1/tenants/{tenant}
	conflictID                      int64
}

func apiSetup(t *testing.T) (*env, apiData) {
	t.Helper()
	e := setup(t)
	d := apiData{tenant: "acme", provider: "crm", secret: e.secret, token: e.token("acme"), base: "/api/v1/tenants/acme"}
	apiSeed(t, e, &d, "")
	return e, d
}

// apiSeed delivers the fixture events; prefix keeps event ids apart between tenants.
func apiSeed(t *testing.T, e *env, d *apiData, prefix string) {
	t.Helper()
	for _, step := range []struct {
		id      string
		body    []byte
		outcome string
	}{
		{"evt-10", snapshotBody("c-1", 10, `{"company":"A10","lead_status":"lead"}`), "applied"},
		{"evt-12", snapshotBody("c-1", 12, `{"company":"A12","lead_status":"customer"}`), "applied"},
		{"evt-11", snapshotBody("c-1", 11, `{"company":"A11"}`), "stale"},
		{"evt-12b", snapshotBody("c-1", 12, `{"company":"B12","lead_status":"churned"}`), "revision_conflict"},
		{"evt-d1", dealBody("d-1", 1, `{"amount":100}`), "applied"},
		{"evt-nr", snapshotBody("c-2", nil, `{"company":"N"}`), "unversioned"},
	} {
		status, body := e.deliver(d.tenant, d.provider, d.secret, prefix+step.id, step.body)
		if got := outcome(t, status, body); got != step.outcome {
			t.Fatalf("%s: outcome %s, want %s", step.id, got, step.outcome)
		}
	}
	status, body := e.get(d.base+"/conflicts?status=open", d.token)
	conflicts := list(t, status, body, "conflicts")
	if len(conflicts) != 1 {
		t.Fatalf("open conflicts %v, want one", conflicts)
	}
	d.conflictID = int64(conflicts[0]["id"].(float64))
}

func dealBody(id string, revision int, snapshot string) []byte {
	return []byte(fmt.Sprintf(`{"type":"deal.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"object_id":%q,"revision":%d,"snapshot":%s}}`,
		id, revision, snapshot))
}

// resolve posts a resolution with a bearer token.
func (e *env) resolve(d apiData, id int64, body string) (int, map[string]any) {
	e.t.Helper()
	return e.post(fmt.Sprintf("%s/conflicts/%d/resolve", d.base, id), []byte(body),
		map[string]string{"Authorization": "Bearer " + d.token, "Content-Type": "application/json"})
}

// list checks a 200 list answer and returns its items.
func list(t *testing.T, status int, body map[string]any, name string) []map[string]any {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	assertKeys(t, body, name, "next_cursor")
	raw, ok := body[name].([]any)
	if !ok {
		t.Fatalf("%q is %T, want a list", name, body[name])
	}
	items := make([]map[string]any, len(raw))
	for i, it := range raw {
		items[i] = it.(map[string]any)
	}
	return items
}

func assertKeys(t *testing.T, m map[string]any, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v (in %v)", got, want, m)
	}
}

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

func assertError(t *testing.T, status int, body map[string]any, wantStatus int, contains string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d (%v), want %d", status, body, wantStatus)
	}
	assertKeys(t, body, "error")
	if msg, _ := body["error"].(string); !strings.Contains(msg, contains) {
		t.Fatalf("error %q, want it to contain %q", msg, contains)
	}
}

func TestAPIContact(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/contacts/crm/c-1", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertKeys(t, body, "contact_id", "provider", "revision", "snapshot", "application_count", "last_applied_event", "updated_at")
	assertJSON(t, "contact", map[string]any{"contact_id": body["contact_id"], "provider": body["provider"],
		"revision": body["revision"], "snapshot": body["snapshot"], "application_count": body["application_count"],
		"last_applied_event": body["last_applied_event"]},
		`{"contact_id":"c-1","provider":"crm","revision":12,"snapshot":{"company":"A12","lead_status":"customer"},
		  "application_count":2,"last_applied_event":"evt-12"}`)
	assertTime(t, body, "updated_at")

	for _, path := range []string{"/contacts/crm/nobody", "/contacts/nope/c-1", "/contacts/crm/c-2", "/contacts/crm/d-1"} {
		status, body := e.get(d.base+path, d.token)
		assertError(t, status, body, http.StatusNotFound, "not found")
	}
}

func TestAPIRecord(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/records/crm/deal/d-1", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertKeys(t, body, "provider", "object_type", "object_id", "revision", "snapshot", "application_count",
		"last_applied_event", "created_at", "updated_at", "deleted", "deleted_revision", "reset_at")
	assertJSON(t, "deal", map[string]any{"provider": body["provider"], "object_type": body["object_type"],
		"object_id": body["object_id"], "revision": body["revision"], "snapshot": body["snapshot"],
		"application_count": body["application_count"], "last_applied_event": body["last_applied_event"]},
		`{"provider":"crm","object_type":"deal","object_id":"d-1","revision":1,"snapshot":{"amount":100},
		  "application_count":1,"last_applied_event":"evt-d1"}`)
	assertTime(t, body, "created_at")
	assertTime(t, body, "updated_at")

	// Contacts are records too.
	status, body = e.get(d.base+"/records/crm/contact/c-1", d.token)
	if status != http.StatusOK || body["revision"] != 12.0 || body["object_id"] != "c-1" {
		t.Fatalf("contact as record: %d %v", status, body)
	}
	status, body = e.get(d.base+"/records/crm/contact/d-1", d.token)
	assertError(t, status, body, http.StatusNotFound, "not found")
}

func TestAPIRevisions(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/contacts/crm/c-1/revisions", d.token)
	revs := list(t, status, body, "revisions")
	if body["next_cursor"] != nil {
		t.Fatalf("next_cursor %v on the only page", body["next_cursor"])
	}
	if len(revs) != 2 {
		t.Fatalf("revisions %v, want 12 and 10", revs)
	}
	for _, r := range revs {
		assertKeys(t, r, "revision", "event_id", "snapshot", "applied_at", "conflict_id")
		assertTime(t, r, "applied_at")
		delete(r, "applied_at")
	}
	assertJSON(t, "revisions", []any{revs[0], revs[1]},
		`[{"revision":12,"event_id":"evt-12","snapshot":{"company":"A12","lead_status":"customer"},"conflict_id":null},
		  {"revision":10,"event_id":"evt-10","snapshot":{"company":"A10","lead_status":"lead"},"conflict_id":null}]`)

	// One per page.
	status, body = e.get(d.base+"/contacts/crm/c-1/revisions?limit=1", d.token)
	page1 := list(t, status, body, "revisions")
	cursor, _ := body["next_cursor"].(string)
	if len(page1) != 1 || page1[0]["revision"] != 12.0 || cursor == "" {
		t.Fatalf("page 1: %v", body)
	}
	status, body = e.get(d.base+"/contacts/crm/c-1/revisions?limit=1&cursor="+url.QueryEscape(cursor), d.token)
	page2 := list(t, status, body, "revisions")
	if len(page2) != 1 || page2[0]["revision"] != 10.0 || body["next_cursor"] != nil {
		t.Fatalf("page 2: %v", body)
	}

	status, body = e.get(d.base+"/contacts/crm/nobody/revisions", d.token)
	assertError(t, status, body, http.StatusNotFound, "not found")
	status, body = e.get(d.base+"/contacts/crm/c-1/revisions?cursor=%25%25", d.token)
	assertError(t, status, body, http.StatusBadRequest, "invalid cursor")
}

func TestAPIEvents(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/events", d.token)
	events := list(t, status, body, "events")
	if body["next_cursor"] != nil {
		t.Fatalf("next_cursor %v on the only page", body["next_cursor"])
	}
	var ids []string
	for _, ev := range events {
		assertKeys(t, ev, "event_id", "provider", "contact_id", "revision", "outcome", "received_at", "reason",
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
		status, body := e.get(d.base+"/events?"+query, d.token)
		var got []string
		for _, ev := range list(t, status, body, "events") {
			got = append(got, ev["event_id"].(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", query, got, want)
		}
	}

	status, body = e.get(d.base+"/events?outcome=bogus", d.token)
	assertError(t, status, body, http.StatusBadRequest, "applied, duplicate, event_conflict, stale, redundant, revision_conflict, unversioned, rejected")
	for _, q := range []string{"limit=0", "limit=-1", "limit=abc", "limit=1.5", "cursor=bm90LWpzb24", "cursor=e30",
		"contact_id=c-1&object_type=deal"} {
		status, body := e.get(d.base+"/events?"+q, d.token)
		if status != http.StatusBadRequest {
			t.Errorf("?%s: status %d (%v), want 400", q, status, body)
		}
	}
}

func TestAPIPagination(t *testing.T) {
	t.Parallel()
	e, d := apiSetup(t)
	// A second conflict so that the conflict list has pages too.
	status, body := e.deliver(d.tenant, d.provider, d.secret, "evt-12c", snapshotBody("c-1", 12, `{"company":"C12"}`))
	if got := outcome(t, status, body); got != "revision_conflict" {
		t.Fatalf("evt-12c: %s", got)
	}
	for _, c := range []struct {
		path, name, key string
		want            []any
	}{
		{"/events", "events", "event_id", []any{"evt-12c", "evt-nr", "evt-d1", "evt-12b", "evt-11", "evt-12", "evt-10"}},
		{"/events?contact_id=c-1", "events", "event_id", []any{"evt-12c", "evt-12b", "evt-11", "evt-12", "evt-10"}},
		{"/conflicts", "conflicts", "id", []any{float64(d.conflictID + 1), float64(d.conflictID)}},
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
			status, body := e.get(d.base+path, d.token)
			items := list(t, status, body, c.name)
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
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/stats", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertKeys(t, body, "outcomes")
	want := `{"applied":3,"duplicate":0,"event_conflict":0,"stale":1,"redundant":0,"revision_conflict":1,"unversioned":1,"rejected":0}`
	assertJSON(t, "outcomes", body["outcomes"], want)

	status, body = e.get(d.base+"/stats?provider=crm", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertJSON(t, "outcomes of crm", body["outcomes"], want)

	// A provider with no events lists every outcome at zero.
	e.provider("acme", "quiet")
	status, body = e.get(d.base+"/stats?provider=quiet", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertJSON(t, "outcomes of quiet", body["outcomes"],
		`{"applied":0,"duplicate":0,"event_conflict":0,"stale":0,"redundant":0,"revision_conflict":0,"unversioned":0,"rejected":0}`)

	status, body = e.get(d.base+"/stats?provider=nope", d.token)
	assertError(t, status, body, http.StatusNotFound, "not found")
}
