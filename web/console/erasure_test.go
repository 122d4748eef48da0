package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestLeadEraseReachesRejectedSignups (M5): the review's five deliveries
// for one email (a signup, one rejected without an object id, one
// rejected with it, a truncated body and one without a type, both kept as
// 400 samples); erasing the lead leaves the email in no body and no event.
func TestLeadEraseReachesRejectedSignups(t *testing.T) {
	t.Parallel()
	e, owner, _ := repairEnv(t)
	const email = "dave.erase@example.com"
	bodies := []struct {
		body   string
		status int
	}{
		{string(webtest.SignupBody(email, "Dave Erase", "spring")), http.StatusOK},
		{`{"type":"lead.signup","data":{"email":"Dave.Erase@Example.com","name":"Dave Erase","phone":"555"}}`, http.StatusOK},
		{string(webtest.SignupBody(email, "Dave Erase", strings.Repeat("c", 300))), http.StatusOK},
		{`{"type":"lead.signup","data":{"email":"` + email + `","name":"Dave Era`, http.StatusBadRequest},
		{`{"data":{"email":"` + email + `","name":"Dave Erase"}}`, http.StatusBadRequest},
	}
	for i, b := range bodies {
		if i == 4 {
			time.Sleep(1100 * time.Millisecond) // one refusal sample per provider a second
		}
		if status, answer := e.Deliver("acme", "crm", e.Secret, "d"+string(rune('1'+i)), []byte(b.body)); status != b.status {
			t.Fatalf("delivery %d: %d %v", i+1, status, answer)
		}
		e.FlushRefusals()
	}
	if n := len(e.Strings(`SELECT id::text FROM deliveries WHERE status = 400 AND body IS NOT NULL`)); n != 2 {
		t.Fatalf("%d samples of 400 kept, want 2", n)
	}
	status, _, _ := owner.Post("/t/acme/leads/erase", url.Values{"email": {email}, "confirm": {email}})
	if status != http.StatusSeeOther {
		t.Fatalf("erase: %d", status)
	}
	for what, sql := range map[string]string{
		"delivery bodies": `SELECT id::text FROM deliveries WHERE strpos(lower(encode(body, 'escape')), 'dave.erase') > 0`,
		"event payloads": `SELECT event_id FROM events WHERE strpos(lower(encode(payload, 'escape')), 'dave.erase') > 0
            OR strpos(lower(snapshot::text), 'dave.erase') > 0 OR strpos(lower(reason), 'dave.erase') > 0
            OR strpos(lower(object_id), 'dave.erase') > 0`,
		"search words": `SELECT e.event_id FROM event_search s JOIN events e USING (tenant_id, received_at, delivery_id, seq)
            WHERE e.payload IS NULL`,
	} {
		if left := e.Strings(sql); len(left) != 0 {
			t.Errorf("%s still name the lead: %v", what, left)
		}
	}
}

// TestRecordEraseBlanksRefusedSamples (M5): erasing a record also blanks
// its provider's kept 400 samples that name its raw id.
func TestRecordEraseBlanksRefusedSamples(t *testing.T) {
	t.Parallel()
	e, owner, _ := repairEnv(t)
	if status, answer := e.Deliver("acme", "crm", e.Secret, "t1", []byte(`{"type":"contact.snapshot","data":{"id":"c-1","email":"zed`)); status != http.StatusBadRequest {
		t.Fatalf("truncated delivery: %d %v", status, answer)
	}
	e.FlushRefusals()
	const named = `SELECT id::text FROM deliveries WHERE strpos(encode(body, 'escape'), '"c-1"') > 0`
	if n := len(e.Strings(named)); n != 2 {
		t.Fatalf("%d bodies name c-1 before the erase, want 2", n)
	}
	if status, _, _ := owner.Post("/t/acme/records/crm/contact/c-1/erase", url.Values{"confirm": {"c-1"}}); status != http.StatusSeeOther {
		t.Fatalf("erase: %d", status)
	}
	if left := e.Strings(named); len(left) != 0 {
		t.Fatalf("bodies still name c-1: %v", left)
	}
}

// TestRepairAuditTargetsHashed (L7): the append-only audit log names the
// records of resets, erasures and conflict resolutions by a hash of their
// id, which may be personal (an email); the timeline still shows them.
func TestRepairAuditTargetsHashed(t *testing.T) {
	t.Parallel()
	e, owner, _ := repairEnv(t)
	const id = "zed@example.com"
	conflict := e.ConflictOf(id, 7, `{"a":1}`, `{"a":2}`)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	if _, err := e.Store.ResolveConflict(ctx, e.Tenant("acme").ID, conflict, domain.ResolveKeep, "", "test"); err != nil {
		t.Fatal(err)
	}
	base := "/t/acme/records/crm/contact/" + url.PathEscape(id)
	for _, step := range []struct{ path, confirm string }{{base + "/reset", id}, {base + "/erase", id}} {
		if status, _, _ := owner.Post(step.path, url.Values{"confirm": {step.confirm}}); status != http.StatusSeeOther {
			t.Fatalf("%s: %d", step.path, status)
		}
	}
	if left := e.Strings(`SELECT action || ' ' || target FROM audit_log WHERE strpos(target, 'zed') > 0`); len(left) != 0 {
		t.Fatalf("audit targets name the record: %v", left)
	}
	if n := len(e.Strings(`SELECT target FROM audit_log WHERE action IN ('record_reset', 'record_erase', 'conflict_resolve')`)); n != 3 {
		t.Fatalf("%d repair entries, want 3", n)
	}
	_, doc := owner.Get("/t/acme/contacts/crm/" + url.PathEscape(id))
	if got := webtest.Text(doc, "tr.repair"); !strings.Contains(got, "erased by owner@example.com") {
		t.Fatalf("timeline repairs %q", got)
	}
}
