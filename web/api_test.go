package web_test

import (
	"context"
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
	e, d := apiSetup(t)
	status, body := e.get(d.base+"/records/crm/deal/d-1", d.token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertKeys(t, body, "provider", "object_type", "object_id", "revision", "snapshot", "application_count",
		"last_applied_event", "created_at", "updated_at")
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

func TestAPIConflicts(t *testing.T) {
	e, d := apiSetup(t)
	for _, q := range []string{"", "?status=open"} {
		status, body := e.get(d.base+"/conflicts"+q, d.token)
		conflicts := list(t, status, body, "conflicts")
		if len(conflicts) != 1 || body["next_cursor"] != nil {
			t.Fatalf("%q: %v", q, body)
		}
		c := conflicts[0]
		assertKeys(t, c, "id", "provider", "contact_id", "object_type", "object_id", "revision", "status", "note",
			"resolved_by", "resolved_at", "accepted", "conflicting", "detected_at")
		assertKeys(t, c["accepted"].(map[string]any), "event_id", "snapshot")
		assertKeys(t, c["conflicting"].(map[string]any), "event_id", "snapshot")
		assertTime(t, c, "detected_at")
		delete(c, "detected_at")
		assertJSON(t, "conflict", c, fmt.Sprintf(`{"id":%d,"provider":"crm","contact_id":"c-1","object_type":"contact",
			"object_id":"c-1","revision":12,"status":"open","note":"","resolved_by":null,"resolved_at":null,
			"accepted":{"event_id":"evt-12","snapshot":{"company":"A12","lead_status":"customer"}},
			"conflicting":{"event_id":"evt-12b","snapshot":{"company":"B12","lead_status":"churned"}}}`, d.conflictID))
	}
	for _, q := range []string{"?status=kept", "?status=adopted"} {
		status, body := e.get(d.base+"/conflicts"+q, d.token)
		if conflicts := list(t, status, body, "conflicts"); len(conflicts) != 0 {
			t.Fatalf("%s: %v", q, conflicts)
		}
	}
	status, body := e.get(d.base+"/conflicts?status=closed", d.token)
	assertError(t, status, body, http.StatusBadRequest, "open, kept or adopted")
}

func TestAPIResolveKeep(t *testing.T) {
	e, d := apiSetup(t)
	status, body := e.resolve(d, d.conflictID, `{"resolution":"keep","note":"the CRM was right"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	assertKeys(t, body, "id", "provider", "contact_id", "object_type", "object_id", "revision", "status", "note",
		"resolved_by", "resolved_at", "accepted", "conflicting", "detected_at")
	if body["status"] != "kept" || body["note"] != "the CRM was right" || body["resolved_by"] != "api token" ||
		body["id"] != float64(d.conflictID) {
		t.Fatalf("resolved %v", body)
	}
	assertTime(t, body, "resolved_at")

	status, body = e.get(d.base+"/contacts/crm/c-1", d.token)
	if status != http.StatusOK || body["application_count"] != 2.0 || body["last_applied_event"] != "evt-12" {
		t.Fatalf("keeping changed the contact: %v", body)
	}
	assertJSON(t, "snapshot", body["snapshot"], `{"company":"A12","lead_status":"customer"}`)

	status, body = e.get(d.base+"/conflicts?status=kept", d.token)
	if kept := list(t, status, body, "conflicts"); len(kept) != 1 || kept[0]["status"] != "kept" {
		t.Fatalf("kept conflicts %v", kept)
	}
	status, body = e.get(d.base+"/conflicts?status=open", d.token)
	if open := list(t, status, body, "conflicts"); len(open) != 0 {
		t.Fatalf("open conflicts %v", open)
	}

	// Resolving twice is refused, whichever way.
	for _, res := range []string{"keep", "adopt"} {
		status, body = e.resolve(d, d.conflictID, `{"resolution":"`+res+`"}`)
		assertError(t, status, body, http.StatusConflict, fmt.Sprintf("conflict %d is already kept", d.conflictID))
	}
}

func TestAPIResolveAdopt(t *testing.T) {
	e, d := apiSetup(t)
	status, body := e.resolve(d, d.conflictID, `{"resolution":"adopt","note":"the churn is real"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	if body["status"] != "adopted" || body["note"] != "the churn is real" || body["resolved_by"] != "api token" {
		t.Fatalf("resolved %v", body)
	}
	assertTime(t, body, "resolved_at")

	status, body = e.get(d.base+"/contacts/crm/c-1", d.token)
	if status != http.StatusOK || body["revision"] != 12.0 || body["application_count"] != 3.0 ||
		body["last_applied_event"] != "evt-12b" {
		t.Fatalf("contact after adopt: %v", body)
	}
	assertJSON(t, "snapshot", body["snapshot"], `{"company":"B12","lead_status":"churned"}`)

	status, body = e.get(d.base+"/contacts/crm/c-1/revisions", d.token)
	revs := list(t, status, body, "revisions")
	if len(revs) != 3 {
		t.Fatalf("revisions %v, want the adopted one on top of 12 and 10", revs)
	}
	delete(revs[0], "applied_at")
	assertJSON(t, "adopted revision", revs[0], fmt.Sprintf(
		`{"revision":12,"event_id":"evt-12b","snapshot":{"company":"B12","lead_status":"churned"},"conflict_id":%d}`, d.conflictID))
	if revs[1]["event_id"] != "evt-12" || revs[2]["event_id"] != "evt-10" {
		t.Fatalf("revisions %v", revs)
	}

	status, body = e.resolve(d, d.conflictID, `{"resolution":"adopt"}`)
	assertError(t, status, body, http.StatusConflict, "is already adopted")
}

func TestAPIAdoptRefusedAfterHigherRevision(t *testing.T) {
	e, d := apiSetup(t)
	status, body := e.deliver(d.tenant, d.provider, d.secret, "evt-13", snapshotBody("c-1", 13, `{"company":"A13"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("evt-13: %s", got)
	}
	status, body = e.resolve(d, d.conflictID, `{"resolution":"adopt"}`)
	assertError(t, status, body, http.StatusConflict,
		"the record has moved on to revision 13; adopting the snapshot of revision 12 would roll it back")

	status, body = e.get(d.base+"/contacts/crm/c-1", d.token)
	if status != http.StatusOK || body["revision"] != 13.0 || body["last_applied_event"] != "evt-13" {
		t.Fatalf("contact after refused adopt: %v", body)
	}
	status, body = e.get(d.base+"/conflicts?status=open", d.token)
	if open := list(t, status, body, "conflicts"); len(open) != 1 {
		t.Fatalf("a refused adopt must leave the conflict open: %v", open)
	}
	// Keeping is still possible.
	status, body = e.resolve(d, d.conflictID, `{"resolution":"keep"}`)
	if status != http.StatusOK || body["status"] != "kept" {
		t.Fatalf("keep after refused adopt: %d %v", status, body)
	}
}

func TestAPIResolveBadRequests(t *testing.T) {
	e, d := apiSetup(t)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{fmt.Sprintf("/conflicts/%d/resolve", d.conflictID), `{"resolution":`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.conflictID), ``, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.conflictID), `{"resolution":"keep"} trailing`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.conflictID), `{"resolution":"merge"}`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.conflictID+100), `{"resolution":"keep"}`, http.StatusNotFound},
		{"/conflicts/abc/resolve", `{"resolution":"keep"}`, http.StatusNotFound},
	} {
		status, body := e.post(d.base+c.path, []byte(c.body), map[string]string{"Authorization": "Bearer " + d.token})
		if status != c.status {
			t.Errorf("%s %s: %d (%v), want %d", c.path, c.body, status, body, c.status)
		}
		assertKeys(t, body, "error")
	}
	status, body := e.get(d.base+"/conflicts?status=open", d.token)
	if open := list(t, status, body, "conflicts"); len(open) != 1 {
		t.Fatalf("bad requests must leave the conflict open: %v", open)
	}
}

func TestAPIAuthentication(t *testing.T) {
	e, d := apiSetup(t)
	path := d.base + "/contacts/crm/c-1"
	for name, header := range map[string]string{
		"missing":     "",
		"not bearer":  "Basic " + d.token,
		"empty":       "Bearer ",
		"unknown":     "Bearer tmk_not-a-token",
		"bare token":  d.token,
		"wrong token": "Bearer " + d.token + "x",
	} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		status, body := e.do(req)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d (%v), want 401", name, status, body)
			continue
		}
		assertKeys(t, body, "error")
	}
	status, body := e.get(path, d.token)
	if status != http.StatusOK {
		t.Fatalf("valid token: %d %v", status, body)
	}

	// Using the token records when; a revoked token stops working.
	var used bool
	err := e.store.Pool().QueryRow(context.Background(),
		`SELECT last_used_at IS NOT NULL FROM api_tokens WHERE name = 'test'`).Scan(&used)
	if err != nil || !used {
		t.Fatalf("last_used_at set: %v, %v", used, err)
	}
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now()`); err != nil {
		t.Fatal(err)
	}
	status, body = e.get(path, d.token)
	assertError(t, status, body, http.StatusUnauthorized, "invalid or revoked API token")

	// An unknown tenant in the URL looks like any missing resource.
	status, body = e.get("/api/v1/tenants/nosuch/contacts/crm/c-1", e.token("acme"))
	assertError(t, status, body, http.StatusNotFound, "not found")
}

// apiRoute is one route of CONTRACT section 4, with the resources named.
type apiRoute struct {
	method, path string
}

func apiRoutes(base, provider, contact string, conflictID int64) []apiRoute {
	return []apiRoute{
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact},
		{http.MethodGet, base + "/contacts/" + provider + "/" + contact + "/revisions"},
		{http.MethodGet, base + "/events"},
		{http.MethodGet, base + "/stats"},
		{http.MethodGet, base + "/conflicts"},
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", base, conflictID)},
		{http.MethodGet, base + "/records/" + provider + "/contact/" + contact},
	}
}

func (e *env) call(rt apiRoute, token string) (int, map[string]any) {
	e.t.Helper()
	var body *strings.Reader
	if rt.method == http.MethodPost {
		body = strings.NewReader(`{"resolution":"adopt","note":"cross-tenant"}`)
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(rt.method, e.srv.URL+rt.path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	return e.do(req)
}

func TestAPITenantIsolation(t *testing.T) {
	e, acme := apiSetup(t)
	// globex has a provider of the same name with the same contact ids, and
	// one of its own.
	globex := apiData{tenant: "globex", provider: "crm", secret: e.provider("globex", "crm"), token: e.token("globex"),
		base: "/api/v1/tenants/globex"}
	apiSeed(t, e, &globex, "g-")
	shop := apiData{tenant: "globex", provider: "shop", secret: e.provider("globex", "shop"), token: globex.token,
		base: globex.base}
	status, body := e.deliver("globex", "shop", shop.secret, "g-shop-1", snapshotBody("g-only", 1, `{"company":"G"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("g-shop-1: %s", got)
	}
	// acme has a provider and a contact globex lacks.
	erp := e.provider("acme", "erp")
	status, body = e.deliver("acme", "erp", erp, "a-erp-1", snapshotBody("c-1", 1, `{"company":"E"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("a-erp-1: %s", got)
	}
	status, body = e.deliver("acme", "crm", acme.secret, "a-only-1", snapshotBody("a-only", 1, `{"company":"A"}`))
	if got := outcome(t, status, body); got != "applied" {
		t.Fatalf("a-only-1: %s", got)
	}
	if globex.conflictID == acme.conflictID {
		t.Fatal("both tenants have the same conflict id")
	}

	// With acme's token, every route under globex answers 404, whatever it names.
	for _, routes := range [][]apiRoute{
		apiRoutes(globex.base, "crm", "c-1", globex.conflictID),
		apiRoutes(globex.base, "shop", "g-only", acme.conflictID),
	} {
		for _, rt := range routes {
			status, body := e.call(rt, acme.token)
			if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
				t.Errorf("acme token %s %s: %d %v, want 404 not found", rt.method, rt.path, status, body)
			}
		}
	}
	// With globex's token, every route under acme answers 404 too.
	for _, rt := range apiRoutes(acme.base, "crm", "c-1", acme.conflictID) {
		status, body := e.call(rt, globex.token)
		if status != http.StatusNotFound || body["error"] != "not found" || len(body) != 1 {
			t.Errorf("globex token %s %s: %d %v, want 404 not found", rt.method, rt.path, status, body)
		}
	}
	// Under its own URL, globex's token cannot reach acme's conflict or
	// acme-only resources: they answer 404 like missing ones.
	for _, rt := range []apiRoute{
		{http.MethodPost, fmt.Sprintf("%s/conflicts/%d/resolve", globex.base, acme.conflictID)},
		{http.MethodGet, globex.base + "/stats?provider=erp"},
		{http.MethodGet, globex.base + "/contacts/erp/c-1"},
		{http.MethodGet, globex.base + "/contacts/erp/c-1/revisions"},
		{http.MethodGet, globex.base + "/records/erp/contact/c-1"},
		{http.MethodGet, globex.base + "/contacts/crm/a-only"},
		{http.MethodGet, globex.base + "/contacts/crm/a-only/revisions"},
		{http.MethodGet, globex.base + "/records/crm/contact/a-only"},
	} {
		status, body := e.call(rt, globex.token)
		if status != http.StatusNotFound {
			t.Errorf("globex token %s %s: %d %v, want 404", rt.method, rt.path, status, body)
		}
	}

	// Lists under each tenant hold only its own data.
	status, body = e.get(globex.base+"/events", globex.token)
	for _, ev := range list(t, status, body, "events") {
		if id := ev["event_id"].(string); !strings.HasPrefix(id, "g-") {
			t.Errorf("globex events list acme's %s", id)
		}
	}
	status, body = e.get(globex.base+"/conflicts", globex.token)
	if cs := list(t, status, body, "conflicts"); len(cs) != 1 || cs[0]["id"] != float64(globex.conflictID) {
		t.Errorf("globex conflicts %v", cs)
	}
	status, body = e.get(acme.base+"/stats", acme.token)
	if status != http.StatusOK || body["outcomes"].(map[string]any)["applied"] != 5.0 { // 3 seeded, a-erp-1, a-only-1
		t.Errorf("acme stats %v", body)
	}
	status, body = e.get(globex.base+"/contacts/crm/c-1", globex.token)
	if status != http.StatusOK || body["last_applied_event"] != "g-evt-12" {
		t.Errorf("globex contact %v", body)
	}
	// acme's conflict survived every attempt.
	status, body = e.get(acme.base+"/conflicts?status=open", acme.token)
	if open := list(t, status, body, "conflicts"); len(open) != 1 || open[0]["id"] != float64(acme.conflictID) {
		t.Errorf("acme open conflicts %v", open)
	}
}
