package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestAPIConflicts(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	for _, q := range []string{"", "?status=open"} {
		status, body := e.Get(d.Base+"/conflicts"+q, d.Token)
		conflicts := webtest.List(t, status, body, "conflicts")
		if len(conflicts) != 1 || body["next_cursor"] != nil {
			t.Fatalf("%q: %v", q, body)
		}
		c := conflicts[0]
		webtest.AssertKeys(t, c, "id", "provider", "contact_id", "object_type", "object_id", "revision", "status", "note",
			"resolved_by", "resolved_at", "accepted", "conflicting", "detected_at")
		webtest.AssertKeys(t, c["accepted"].(map[string]any), "event_id", "snapshot")
		webtest.AssertKeys(t, c["conflicting"].(map[string]any), "event_id", "snapshot")
		assertTime(t, c, "detected_at")
		delete(c, "detected_at")
		assertJSON(t, "conflict", c, fmt.Sprintf(`{"id":%d,"provider":"crm","contact_id":"c-1","object_type":"contact",
			"object_id":"c-1","revision":12,"status":"open","note":"","resolved_by":null,"resolved_at":null,
			"accepted":{"event_id":"evt-12","snapshot":{"company":"A12","lead_status":"customer"}},
			"conflicting":{"event_id":"evt-12b","snapshot":{"company":"B12","lead_status":"churned"}}}`, d.ConflictID))
	}
	for _, q := range []string{"?status=kept", "?status=adopted"} {
		status, body := e.Get(d.Base+"/conflicts"+q, d.Token)
		if conflicts := webtest.List(t, status, body, "conflicts"); len(conflicts) != 0 {
			t.Fatalf("%s: %v", q, conflicts)
		}
	}
	status, body := e.Get(d.Base+"/conflicts?status=closed", d.Token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "open, kept or adopted")
}

func TestAPIResolveKeep(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Resolve(d, d.ConflictID, `{"resolution":"keep","note":"the CRM was right"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	webtest.AssertKeys(t, body, "id", "provider", "contact_id", "object_type", "object_id", "revision", "status", "note",
		"resolved_by", "resolved_at", "accepted", "conflicting", "detected_at")
	if body["status"] != "kept" || body["note"] != "the CRM was right" || body["resolved_by"] != "api token" ||
		body["id"] != float64(d.ConflictID) {
		t.Fatalf("resolved %v", body)
	}
	assertTime(t, body, "resolved_at")

	status, body = e.Get(d.Base+"/contacts/crm/c-1", d.Token)
	if status != http.StatusOK || body["application_count"] != 2.0 || body["last_applied_event"] != "evt-12" {
		t.Fatalf("keeping changed the contact: %v", body)
	}
	assertJSON(t, "snapshot", body["snapshot"], `{"company":"A12","lead_status":"customer"}`)

	status, body = e.Get(d.Base+"/conflicts?status=kept", d.Token)
	if kept := webtest.List(t, status, body, "conflicts"); len(kept) != 1 || kept[0]["status"] != "kept" {
		t.Fatalf("kept conflicts %v", kept)
	}
	status, body = e.Get(d.Base+"/conflicts?status=open", d.Token)
	if open := webtest.List(t, status, body, "conflicts"); len(open) != 0 {
		t.Fatalf("open conflicts %v", open)
	}

	// Resolving twice is refused, whichever way.
	for _, res := range []string{"keep", "adopt"} {
		status, body = e.Resolve(d, d.ConflictID, `{"resolution":"`+res+`"}`)
		webtest.AssertError(t, status, body, http.StatusConflict, fmt.Sprintf("conflict %d is already kept", d.ConflictID))
	}
}

func TestAPIResolveAdopt(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Resolve(d, d.ConflictID, `{"resolution":"adopt","note":"the churn is real"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	if body["status"] != "adopted" || body["note"] != "the churn is real" || body["resolved_by"] != "api token" {
		t.Fatalf("resolved %v", body)
	}
	assertTime(t, body, "resolved_at")

	status, body = e.Get(d.Base+"/contacts/crm/c-1", d.Token)
	if status != http.StatusOK || body["revision"] != 12.0 || body["application_count"] != 3.0 ||
		body["last_applied_event"] != "evt-12b" {
		t.Fatalf("contact after adopt: %v", body)
	}
	assertJSON(t, "snapshot", body["snapshot"], `{"company":"B12","lead_status":"churned"}`)

	status, body = e.Get(d.Base+"/contacts/crm/c-1/revisions", d.Token)
	revs := webtest.List(t, status, body, "revisions")
	if len(revs) != 3 {
		t.Fatalf("revisions %v, want the adopted one on top of 12 and 10", revs)
	}
	delete(revs[0], "applied_at")
	assertJSON(t, "adopted revision", revs[0], fmt.Sprintf(
		`{"revision":12,"event_id":"evt-12b","snapshot":{"company":"B12","lead_status":"churned"},"conflict_id":%d}`, d.ConflictID))
	if revs[1]["event_id"] != "evt-12" || revs[2]["event_id"] != "evt-10" {
		t.Fatalf("revisions %v", revs)
	}

	status, body = e.Resolve(d, d.ConflictID, `{"resolution":"adopt"}`)
	webtest.AssertError(t, status, body, http.StatusConflict, "is already adopted")
}

func TestAPIAdoptRefusedAfterHigherRevision(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	status, body := e.Deliver(d.Tenant, d.Provider, d.Secret, "evt-13", webtest.SnapshotBody("c-1", 13, `{"company":"A13"}`))
	if got := webtest.Outcome(t, status, body); got != "applied" {
		t.Fatalf("evt-13: %s", got)
	}
	status, body = e.Resolve(d, d.ConflictID, `{"resolution":"adopt"}`)
	webtest.AssertError(t, status, body, http.StatusConflict,
		"the record has moved on to revision 13; adopting the snapshot of revision 12 would roll it back")

	status, body = e.Get(d.Base+"/contacts/crm/c-1", d.Token)
	if status != http.StatusOK || body["revision"] != 13.0 || body["last_applied_event"] != "evt-13" {
		t.Fatalf("contact after refused adopt: %v", body)
	}
	status, body = e.Get(d.Base+"/conflicts?status=open", d.Token)
	if open := webtest.List(t, status, body, "conflicts"); len(open) != 1 {
		t.Fatalf("a refused adopt must leave the conflict open: %v", open)
	}
	// Keeping is still possible.
	status, body = e.Resolve(d, d.ConflictID, `{"resolution":"keep"}`)
	if status != http.StatusOK || body["status"] != "kept" {
		t.Fatalf("keep after refused adopt: %d %v", status, body)
	}
}

func TestAPIResolveBadRequests(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{fmt.Sprintf("/conflicts/%d/resolve", d.ConflictID), `{"resolution":`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.ConflictID), ``, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.ConflictID), `{"resolution":"keep"} trailing`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.ConflictID), `{"resolution":"merge"}`, http.StatusBadRequest},
		{fmt.Sprintf("/conflicts/%d/resolve", d.ConflictID+100), `{"resolution":"keep"}`, http.StatusNotFound},
		{"/conflicts/abc/resolve", `{"resolution":"keep"}`, http.StatusNotFound},
	} {
		status, body := e.Post(d.Base+c.path, []byte(c.body), map[string]string{"Authorization": "Bearer " + d.Token})
		if status != c.status {
			t.Errorf("%s %s: %d (%v), want %d", c.path, c.body, status, body, c.status)
		}
		webtest.AssertKeys(t, body, "error")
	}
	status, body := e.Get(d.Base+"/conflicts?status=open", d.Token)
	if open := webtest.List(t, status, body, "conflicts"); len(open) != 1 {
		t.Fatalf("bad requests must leave the conflict open: %v", open)
	}
}
