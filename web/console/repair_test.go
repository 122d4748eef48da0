package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// repairEnv is acme with contact c-1 of crm at revision 5 and owner and
// operator browsers.
func repairEnv(t *testing.T) (*webtest.Env, *webtest.Browser, *webtest.Browser) {
	t.Helper()
	e := webtest.Setup(t)
	if got := e.Outcome("acme", "crm", e.Secret, "e5", webtest.SnapshotBody("c-1", 5, `{"job_title":"CTO"}`)); got != "applied" {
		t.Fatalf("outcome %s", got)
	}
	return e, e.WithRole("owner@example.com", domain.RoleOwner), e.WithRole("operator@example.com", domain.RoleOperator)
}

func TestConsoleResetAndErase(t *testing.T) {
	t.Parallel()
	e, owner, operator := repairEnv(t)
	const timeline = "/t/acme/contacts/crm/c-1"
	const base = "/t/acme/records/crm/contact/c-1"

	_, doc := operator.Get(timeline)
	if doc.Find("form.repair-reset, form.repair-erase").Length() != 0 {
		t.Fatal("an operator is shown the repair forms")
	}
	if status, _, _ := operator.Post(base+"/reset", url.Values{"confirm": {"c-1"}}); status != http.StatusForbidden {
		t.Fatalf("operator reset: %d, want 403", status)
	}
	_, doc = owner.Get(timeline)
	if doc.Find("form.repair-reset").Length() != 1 || doc.Find("form.repair-erase").Length() != 1 {
		t.Fatal("the owner is not shown the repair forms")
	}

	// A mismatched confirmation changes nothing and says why, in its form.
	status, doc, _ := owner.Post(base+"/reset", url.Values{"confirm": {"c-2"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "form.repair-reset .error"), `type "c-1" exactly`) ||
		doc.Find("form.repair-erase .error").Length() != 0 {
		t.Fatalf("mismatched reset: %d, error %q", status, webtest.Text(doc, "form.repair-reset .error"))
	}
	if got := e.Outcome("acme", "crm", e.Secret, "e3", webtest.SnapshotBody("c-1", 3, `{"job_title":"CFO"}`)); got != "stale" {
		t.Fatalf("after a refused reset, an older revision is %s", got)
	}

	status, _, to := owner.Post(base+"/reset", url.Values{"confirm": {"c-1"}})
	if status != http.StatusSeeOther || to != timeline {
		t.Fatalf("reset: %d to %q", status, to)
	}
	_, doc = owner.Get(timeline)
	if !strings.Contains(webtest.Text(doc, "h1"), "revision forgotten") || !strings.Contains(webtest.Text(doc, "tr.repair"), "reset by owner@example.com") {
		t.Fatalf("timeline after reset: h1 %q, repair line %q", webtest.Text(doc, "h1"), webtest.Text(doc, "tr.repair"))
	}
	if got := e.Outcome("acme", "crm", e.Secret, "e2", webtest.SnapshotBody("c-1", 2, `{"job_title":"COO"}`)); got != "applied" {
		t.Fatalf("after a reset, an older revision is %s", got)
	}

	if status, doc, _ := owner.Post(base+"/erase", url.Values{"confirm": {"C-1"}}); status != http.StatusUnprocessableEntity ||
		webtest.Text(doc, "form.repair-erase .error") == "" {
		t.Fatalf("mismatched erase: %d", status)
	}
	if status, _, to := owner.Post(base+"/erase", url.Values{"confirm": {"c-1"}}); status != http.StatusSeeOther || to != timeline {
		t.Fatalf("erase: %d to %q", status, to)
	}
	_, doc = owner.Get(timeline)
	if !strings.Contains(webtest.Text(doc, "tr.repair"), "erased by owner@example.com") || doc.Find("form.repair-reset").Length() != 0 {
		t.Fatalf("timeline after erase: repair line %q", webtest.Text(doc, "tr.repair"))
	}
}

func TestConsoleLeadErase(t *testing.T) {
	t.Parallel()
	e, owner, operator := repairEnv(t)
	body := []byte(`{"type":"lead.signup","data":{"email":"ann@example.com","name":"Ann","campaign":"spring"}}`)
	if got := e.Outcome("acme", "crm", e.Secret, "l1", body); got != "applied" {
		t.Fatalf("signup %s", got)
	}
	if status, _ := operator.Get("/t/acme/leads/erase"); status != http.StatusForbidden {
		t.Fatalf("operator: %d, want 403", status)
	}
	status, doc, _ := owner.Post("/t/acme/leads/erase", url.Values{"email": {"ann@example.com"}, "confirm": {"bob@example.com"}})
	if status != http.StatusUnprocessableEntity || webtest.Text(doc, "form.lead-erase .error") == "" {
		t.Fatalf("mismatch: %d %q", status, webtest.Text(doc, "form.lead-erase .error"))
	}
	status, _, to := owner.Post("/t/acme/leads/erase", url.Values{"email": {"ann@example.com"}, "confirm": {"Ann@Example.com"}})
	if status != http.StatusSeeOther || to != "/t/acme/leads/erase" {
		t.Fatalf("erase: %d to %q", status, to)
	}
	people, _, err := e.Store.People(context.Background(), e.Tenant("acme").ID, "ann@example.com", domain.Page{Limit: 10})
	if err != nil || len(people) != 0 {
		t.Fatalf("people left: %v, %v", people, err)
	}
	status, doc, _ = owner.Post("/t/acme/leads/erase", url.Values{"email": {"ann@example.com"}, "confirm": {"ann@example.com"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "form.lead-erase .error"), "no person") {
		t.Fatalf("second erase: %d %q", status, webtest.Text(doc, "form.lead-erase .error"))
	}
}

func TestAPIRepair(t *testing.T) {
	t.Parallel()
	e, _, _ := repairEnv(t)
	write := e.TokenWith("acme", domain.NewAPIToken{Name: "w", Access: domain.TokenWrite})
	read := e.TokenWith("acme", domain.NewAPIToken{Name: "r", Access: domain.TokenRead})
	const base = "/api/v1/tenants/acme/records/crm/contact/"
	call := func(method, path, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, e.Srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return e.Do(req)
	}

	if status, body := call(http.MethodPost, base+"c-1/reset", read); status != http.StatusForbidden {
		t.Fatalf("reset with a read-only token: %d %v", status, body)
	}
	if status, body := call(http.MethodPost, base+"nope/reset", write); status != http.StatusNotFound {
		t.Fatalf("reset of an unknown record: %d %v", status, body)
	}
	status, body := call(http.MethodPost, base+"c-1/reset", write)
	if status != http.StatusOK || body["revision"] != nil || body["reset_at"] == nil || body["deleted"] != false ||
		body["snapshot"].(map[string]any)["job_title"] != "CTO" {
		t.Fatalf("reset: %d %v", status, body)
	}
	if _, body := e.Get(base+"c-1", read); body["revision"] != nil || body["reset_at"] == nil {
		t.Fatalf("record after reset: %v", body)
	}

	if status, _ := call(http.MethodDelete, base+"c-1", read); status != http.StatusForbidden {
		t.Fatalf("erase with a read-only token: %d", status)
	}
	status, body = call(http.MethodDelete, base+"c-1", write)
	if status != http.StatusOK || body["erased"] != true || body["events"] != float64(1) || body["accepted_revisions"] != float64(1) {
		t.Fatalf("erase: %d %v", status, body)
	}
	if status, _ := e.Get(base+"c-1", read); status != http.StatusNotFound {
		t.Fatalf("record after erase: %d", status)
	}
	if status, _ := call(http.MethodDelete, base+"nope", write); status != http.StatusNotFound {
		t.Fatalf("erase of an unknown record: %d", status)
	}
	var entries int
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE actor = 'w' AND action IN ('record_reset', 'record_erase')`).Scan(&entries); err != nil || entries != 2 {
		t.Fatalf("%d audit entries by the token, %v", entries, err)
	}
}

func TestDeletedRecordIsShown(t *testing.T) {
	t.Parallel()
	e, owner, _ := repairEnv(t)
	e.DeleteContact("c-9", 400)
	_, body := e.Get("/api/v1/tenants/acme/records/crm/contact/c-9", e.Token("acme"))
	if body["deleted"] != true || body["deleted_revision"] != float64(400) {
		t.Fatalf("record API: %v", body)
	}
	if _, body := e.Get("/api/v1/tenants/acme/records/crm/contact/c-1", e.Token("acme")); body["deleted"] != false || body["deleted_revision"] != nil || body["revision"] != float64(5) {
		t.Fatalf("record API of a live record: %v", body)
	}
	_, doc := owner.Get("/t/acme/contacts/crm/c-9")
	if got := webtest.Text(doc, "h1 .deleted"); got != "deleted at revision 400" {
		t.Fatalf("timeline badge %q", got)
	}
}
