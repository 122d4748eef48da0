package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

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
