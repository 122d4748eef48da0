package webtest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// apiData is a tenant's worth of API fixtures: contact c-1 received
// revisions 10, 12, 11 (stale) and then 12 again with another snapshot,
// which opened a conflict; deal d-1 is at revision 1; contact c-2 sent an
// event without a revision.
type ApiData struct {
	Tenant, Provider, Secret, Token string
	Base                            string // /api/v1/tenants/{tenant}
	ConflictID                      int64
}

func ApiSetup(t *testing.T) (*Env, ApiData) {
	t.Helper()
	e := Setup(t)
	d := ApiData{Tenant: "acme", Provider: "crm", Secret: e.Secret, Token: e.Token("acme"), Base: "/api/v1/tenants/acme"}
	ApiSeed(t, e, &d, "")
	return e, d
}

// apiSeed delivers the fixture events; prefix keeps event ids apart between tenants.
func ApiSeed(t *testing.T, e *Env, d *ApiData, prefix string) {
	t.Helper()
	for _, step := range []struct {
		id      string
		body    []byte
		outcome string
	}{
		{"evt-10", SnapshotBody("c-1", 10, `{"company":"A10","lead_status":"lead"}`), "applied"},
		{"evt-12", SnapshotBody("c-1", 12, `{"company":"A12","lead_status":"customer"}`), "applied"},
		{"evt-11", SnapshotBody("c-1", 11, `{"company":"A11"}`), "stale"},
		{"evt-12b", SnapshotBody("c-1", 12, `{"company":"B12","lead_status":"churned"}`), "revision_conflict"},
		{"evt-d1", DealBody("d-1", 1, `{"amount":100}`), "applied"},
		{"evt-nr", SnapshotBody("c-2", nil, `{"company":"N"}`), "unversioned"},
	} {
		status, body := e.Deliver(d.Tenant, d.Provider, d.Secret, prefix+step.id, step.body)
		if got := Outcome(t, status, body); got != step.outcome {
			t.Fatalf("%s: outcome %s, want %s", step.id, got, step.outcome)
		}
	}
	status, body := e.Get(d.Base+"/conflicts?status=open", d.Token)
	conflicts := List(t, status, body, "conflicts")
	if len(conflicts) != 1 {
		t.Fatalf("open conflicts %v, want one", conflicts)
	}
	d.ConflictID = int64(conflicts[0]["id"].(float64))
}

func DealBody(id string, revision int, snapshot string) []byte {
	return []byte(fmt.Sprintf(`{"type":"deal.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"object_id":%q,"revision":%d,"snapshot":%s}}`,
		id, revision, snapshot))
}

// resolve posts a resolution with a bearer token.
func (e *Env) Resolve(d ApiData, id int64, body string) (int, map[string]any) {
	e.T.Helper()
	return e.Post(fmt.Sprintf("%s/conflicts/%d/resolve", d.Base, id), []byte(body),
		map[string]string{"Authorization": "Bearer " + d.Token, "Content-Type": "application/json"})
}

// list checks a 200 list answer and returns its items.
func List(t *testing.T, status int, body map[string]any, name string) []map[string]any {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	AssertKeys(t, body, name, "next_cursor")
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

func AssertKeys(t *testing.T, m map[string]any, want ...string) {
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

func AssertError(t *testing.T, status int, body map[string]any, wantStatus int, contains string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d (%v), want %d", status, body, wantStatus)
	}
	AssertKeys(t, body, "error")
	if msg, _ := body["error"].(string); !strings.Contains(msg, contains) {
		t.Fatalf("error %q, want it to contain %q", msg, contains)
	}
}
