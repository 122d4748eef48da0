package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReplayOfAppliedIsDuplicate: a replay answers like the webhook, is a
// new delivery linked both ways, finds its applied event a duplicate, and
// is in the audit log; a replay cannot itself be replayed.
func TestReplayOfAppliedIsDuplicate(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	orig := answer["delivery_id"].(string)

	status, replayed := webtest.ReplayAPI(e, token, orig)
	if got := webtest.Outcome(t, status, replayed); got != "duplicate" {
		t.Fatalf("replay outcome %s, want duplicate", got)
	}
	webtest.AssertKeys(t, replayed, "delivery_id", "results")
	assertJSON(t, "result", replayed["results"], `[{"event_id": "m1", "outcome": "duplicate", "contact_id": "c-1",
		"revision": 1, "current_revision": 1}]`)
	id := replayed["delivery_id"].(string)
	if id == orig {
		t.Fatal("the replay reused the original's id")
	}
	d, _ := e.DeliveryJSON(token, id)
	if d["replay_of"] != orig || d["signature"] != "valid" || d["body"] == nil {
		t.Fatalf("replay %v", d)
	}
	o, _ := e.DeliveryJSON(token, orig)
	assertJSON(t, "replays", o["replays"], `["`+id+`"]`)

	status, body := webtest.ReplayAPI(e, token, id)
	webtest.AssertError(t, status, body, http.StatusConflict, "itself a replay")
	want := []string{"test delivery_replay delivery " + orig + ": replayed as delivery " + id + ": 1 duplicate"}
	if got := e.AuditEntries(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit %q, want %q", got, want)
	}
}

// TestReplayAfterEnablingScope: an event rejected because its scope was
// disabled claimed nothing, so its replay after the scope is enabled
// applies it, and a second replay is a duplicate.
func TestReplayAfterEnablingScope(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	e.SetScope(false)
	status, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 4, `{"job_title":"CTO"}`))
	if got := webtest.Outcome(t, status, answer); got != "rejected" {
		t.Fatalf("delivery to a disabled scope: %s", got)
	}
	orig := answer["delivery_id"].(string)
	e.SetScope(true)
	if got := webtest.ReplayOutcome(e, token, orig); got != "applied" {
		t.Fatalf("replay after enabling the scope: %s, want applied", got)
	}
	status, rec := e.Get("/api/v1/tenants/acme/contacts/crm/c-1", token)
	if status != http.StatusOK || rec["revision"] != float64(4) {
		t.Fatalf("record after the replay: %d %v", status, rec)
	}
	if got := webtest.ReplayOutcome(e, token, orig); got != "duplicate" {
		t.Fatalf("second replay: %s, want duplicate", got)
	}
}

// TestReplayUnparsableAnd404: a body today's parser refuses answers 409
// and stores nothing; unknown and other tenants' deliveries are 404.
func TestReplayUnparsableAnd404(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	if status, _ := e.Deliver1("m1", []byte(`{"no": "type"}`)); status != http.StatusBadRequest {
		t.Fatalf("delivery without a type answered %d", status)
	}
	e.FlushRefusals()
	d, _ := e.LatestDelivery(token, "crm")
	status, body := webtest.ReplayAPI(e, token, d["id"].(string))
	webtest.AssertError(t, status, body, http.StatusConflict, `cannot be parsed by today's receiver: body has no "type"`)

	other := e.Provider("other", "crm")
	_, answer := e.Deliver("other", "crm", other, "x1", webtest.SnapshotBody("c-1", 1, `{}`))
	for _, id := range []string{answer["delivery_id"].(string), "nope"} {
		status, body := webtest.ReplayAPI(e, token, id)
		webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	}
	var n int
	e.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d replays stored", n)
	}
}
