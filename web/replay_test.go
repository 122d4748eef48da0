package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// replayAPI posts POST deliveries/{id}/replay with token.
func (e *env) replayAPI(token, id string) (int, map[string]any) {
	e.t.Helper()
	return e.post("/api/v1/tenants/acme/deliveries/"+id+"/replay", nil, map[string]string{"Authorization": "Bearer " + token})
}

// replayOutcome replays a delivery of one event and returns its outcome.
func (e *env) replayOutcome(token, id string) string {
	e.t.Helper()
	status, body := e.replayAPI(token, id)
	return outcome(e.t, status, body)
}

// setScope enables or disables acme/crm's contact.snapshot scope.
func (e *env) setScope(enabled bool) {
	e.t.Helper()
	ctx := cliContext()
	p, err := e.store.Endpoint(ctx, "acme", "crm")
	if err != nil {
		e.t.Fatal(err)
	}
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	sc.Enabled = enabled
	if err := e.store.SaveProviderScope(ctx, p.TenantID, p.ID, sc); err != nil {
		e.t.Fatal(err)
	}
}

// auditEntries lists acme's audit entries of replays as "actor action
// target: summary".
func (e *env) auditEntries() []string {
	e.t.Helper()
	rows, err := e.store.Pool().Query(context.Background(),
		`SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
		 WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme')
		   AND action IN ('delivery_replay', 'replay_start', 'replay_cancel', 'replay_done') ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestReplayOfAppliedIsDuplicate: a replay answers like the webhook, is a
// new delivery linked both ways, finds its applied event a duplicate, and
// is in the audit log; a replay cannot itself be replayed.
func TestReplayOfAppliedIsDuplicate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	token := e.token("acme")
	_, answer := e.deliver1("m1", snapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	orig := answer["delivery_id"].(string)

	status, replayed := e.replayAPI(token, orig)
	if got := outcome(t, status, replayed); got != "duplicate" {
		t.Fatalf("replay outcome %s, want duplicate", got)
	}
	assertKeys(t, replayed, "delivery_id", "results")
	assertJSON(t, "result", replayed["results"], `[{"event_id": "m1", "outcome": "duplicate", "contact_id": "c-1",
		"revision": 1, "current_revision": 1}]`)
	id := replayed["delivery_id"].(string)
	if id == orig {
		t.Fatal("the replay reused the original's id")
	}
	d, _ := e.deliveryJSON(token, id)
	if d["replay_of"] != orig || d["signature"] != "valid" || d["body"] == nil {
		t.Fatalf("replay %v", d)
	}
	o, _ := e.deliveryJSON(token, orig)
	assertJSON(t, "replays", o["replays"], `["`+id+`"]`)

	status, body := e.replayAPI(token, id)
	assertError(t, status, body, http.StatusConflict, "itself a replay")
	want := []string{"test delivery_replay delivery " + orig + ": replayed as delivery " + id + ": 1 duplicate"}
	if got := e.auditEntries(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit %q, want %q", got, want)
	}
}

// TestReplayAfterEnablingScope: an event rejected because its scope was
// disabled claimed nothing, so its replay after the scope is enabled
// applies it, and a second replay is a duplicate.
func TestReplayAfterEnablingScope(t *testing.T) {
	t.Parallel()
	e := setup(t)
	token := e.token("acme")
	e.setScope(false)
	status, answer := e.deliver1("m1", snapshotBody("c-1", 4, `{"job_title":"CTO"}`))
	if got := outcome(t, status, answer); got != "rejected" {
		t.Fatalf("delivery to a disabled scope: %s", got)
	}
	orig := answer["delivery_id"].(string)
	e.setScope(true)
	if got := e.replayOutcome(token, orig); got != "applied" {
		t.Fatalf("replay after enabling the scope: %s, want applied", got)
	}
	status, rec := e.get("/api/v1/tenants/acme/contacts/crm/c-1", token)
	if status != http.StatusOK || rec["revision"] != float64(4) {
		t.Fatalf("record after the replay: %d %v", status, rec)
	}
	if got := e.replayOutcome(token, orig); got != "duplicate" {
		t.Fatalf("second replay: %s, want duplicate", got)
	}
}

// TestReplayUnparsableAnd404: a body today's parser refuses answers 409
// and stores nothing; unknown and other tenants' deliveries are 404.
func TestReplayUnparsableAnd404(t *testing.T) {
	t.Parallel()
	e := setup(t)
	token := e.token("acme")
	if status, _ := e.deliver1("m1", []byte(`{"no": "type"}`)); status != http.StatusBadRequest {
		t.Fatalf("delivery without a type answered %d", status)
	}
	e.flushRefusals()
	d, _ := e.latestDelivery(token, "crm")
	status, body := e.replayAPI(token, d["id"].(string))
	assertError(t, status, body, http.StatusConflict, `cannot be parsed by today's receiver: body has no "type"`)

	other := e.provider("other", "crm")
	_, answer := e.deliver("other", "crm", other, "x1", snapshotBody("c-1", 1, `{}`))
	for _, id := range []string{answer["delivery_id"].(string), "nope"} {
		status, body := e.replayAPI(token, id)
		assertError(t, status, body, http.StatusNotFound, "not found")
	}
	var n int
	e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d replays stored", n)
	}
}

// TestConsoleDeliveryAndReplay: the inspector shows the request (its
// signature redacted), the body and the events, and its replay button
// replays as the operator, who is recorded in the audit log.
func TestConsoleDeliveryAndReplay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	_, answer := e.deliver1("m1", snapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	id := answer["delivery_id"].(string)

	status, doc := b.get("/t/acme/deliveries/" + id)
	if status != http.StatusOK {
		t.Fatalf("inspector: %d", status)
	}
	if got := text(doc, "p.request-line"); got != "POST /webhooks/acme/crm" {
		t.Errorf("request line %q", got)
	}
	page, _ := doc.Html()
	if !strings.Contains(page, "v1,") || !strings.Contains(page, "…") || !strings.Contains(text(doc, "pre.delivery-body"), `"job_title": "CTO"`) {
		t.Errorf("the page lacks the redacted signature or the body")
	}
	if got := text(doc, "table.delivery-events .event-link"); got != "m1" {
		t.Errorf("events %q", got)
	}
	if doc.Find(`form.replay-form[action="/t/acme/deliveries/`+id+`/replay"]`).Length() != 1 {
		t.Fatal("no replay button")
	}

	status, _, loc := b.post("/t/acme/deliveries/"+id+"/replay", url.Values{})
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/t/acme/deliveries/") || loc == "/t/acme/deliveries/"+id {
		t.Fatalf("replay: %d to %q", status, loc)
	}
	_, doc = b.get(loc)
	if got := shownFlash(doc); got != "Replayed as this delivery: 1 duplicate." {
		t.Errorf("flash %q", got)
	}
	if doc.Find(`a.replay-of[href="/t/acme/deliveries/`+id+`"]`).Length() != 1 || doc.Find("form.replay-form").Length() != 0 {
		t.Error("the replay's page does not link its original, or offers to replay a replay")
	}
	if got := e.auditEntries(); len(got) != 1 || !strings.HasPrefix(got[0], "ops@example.com delivery_replay delivery "+id) {
		t.Fatalf("audit %q", got)
	}

	// Linked from the event history and the overview.
	for _, path := range []string{"/t/acme/events", "/t/acme"} {
		_, doc := b.get(path)
		if doc.Find(`a.delivery-link[href="/t/acme/deliveries/`+id+`"]`).Length() == 0 {
			t.Errorf("%s does not link the delivery", path)
		}
	}
	// Another tenant's delivery is not found.
	other := e.provider("other", "crm")
	_, answer = e.deliver("other", "crm", other, "x1", snapshotBody("c-1", 1, `{}`))
	if status, _ := b.get("/t/acme/deliveries/" + answer["delivery_id"].(string)); status != http.StatusNotFound {
		t.Errorf("another tenant's delivery: %d", status)
	}
}
