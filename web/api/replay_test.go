package api_test

import (
	"context"
	"net/http"
	"net/url"
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

	status, replayed := e.ReplayAPI(token, orig)
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

	status, body := e.ReplayAPI(token, id)
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
	if got := e.ReplayOutcome(token, orig); got != "applied" {
		t.Fatalf("replay after enabling the scope: %s, want applied", got)
	}
	status, rec := e.Get("/api/v1/tenants/acme/contacts/crm/c-1", token)
	if status != http.StatusOK || rec["revision"] != float64(4) {
		t.Fatalf("record after the replay: %d %v", status, rec)
	}
	if got := e.ReplayOutcome(token, orig); got != "duplicate" {
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
	status, body := e.ReplayAPI(token, d["id"].(string))
	webtest.AssertError(t, status, body, http.StatusConflict, `cannot be parsed by today's receiver: body has no "type"`)

	other := e.Provider("other", "crm")
	_, answer := e.Deliver("other", "crm", other, "x1", webtest.SnapshotBody("c-1", 1, `{}`))
	for _, id := range []string{answer["delivery_id"].(string), "nope"} {
		status, body := e.ReplayAPI(token, id)
		webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	}
	var n int
	e.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d replays stored", n)
	}
}

// TestConsoleDeliveryAndReplay: the inspector shows the request (its
// signature redacted), the body and the events, and its replay button
// replays as the operator, who is recorded in the audit log.
func TestConsoleDeliveryAndReplay(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	id := answer["delivery_id"].(string)

	status, doc := b.Get("/t/acme/deliveries/" + id)
	if status != http.StatusOK {
		t.Fatalf("inspector: %d", status)
	}
	if got := webtest.Text(doc, "p.request-line"); got != "POST /webhooks/acme/crm" {
		t.Errorf("request line %q", got)
	}
	page, _ := doc.Html()
	if !strings.Contains(page, "v1,") || !strings.Contains(page, "…") || !strings.Contains(webtest.Text(doc, "pre.delivery-body"), `"job_title": "CTO"`) {
		t.Errorf("the page lacks the redacted signature or the body")
	}
	if got := webtest.Text(doc, "table.delivery-events .event-link"); got != "m1" {
		t.Errorf("events %q", got)
	}
	if doc.Find(`form.replay-form[action="/t/acme/deliveries/`+id+`/replay"]`).Length() != 1 {
		t.Fatal("no replay button")
	}

	status, _, loc := b.Post("/t/acme/deliveries/"+id+"/replay", url.Values{})
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/t/acme/deliveries/") || loc == "/t/acme/deliveries/"+id {
		t.Fatalf("replay: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if got := webtest.ShownFlash(doc); got != "Replayed as this delivery: 1 duplicate." {
		t.Errorf("flash %q", got)
	}
	if doc.Find(`a.replay-of[href="/t/acme/deliveries/`+id+`"]`).Length() != 1 || doc.Find("form.replay-form").Length() != 0 {
		t.Error("the replay's page does not link its original, or offers to replay a replay")
	}
	if got := e.AuditEntries(); len(got) != 1 || !strings.HasPrefix(got[0], "ops@example.com delivery_replay delivery "+id) {
		t.Fatalf("audit %q", got)
	}

	// Linked from the event history and the overview.
	for _, path := range []string{"/t/acme/events", "/t/acme"} {
		_, doc := b.Get(path)
		if doc.Find(`a.delivery-link[href="/t/acme/deliveries/`+id+`"]`).Length() == 0 {
			t.Errorf("%s does not link the delivery", path)
		}
	}
	// Another tenant's delivery is not found.
	other := e.Provider("other", "crm")
	_, answer = e.Deliver("other", "crm", other, "x1", webtest.SnapshotBody("c-1", 1, `{}`))
	if status, _ := b.Get("/t/acme/deliveries/" + answer["delivery_id"].(string)); status != http.StatusNotFound {
		t.Errorf("another tenant's delivery: %d", status)
	}
}
