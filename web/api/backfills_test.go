package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// startBackfill posts body to acme's provider's backfills with token.
func startBackfill(e *webtest.Env, token, provider, body string) (int, map[string]any) {
	e.T.Helper()
	return e.Post("/api/v1/tenants/acme/providers/"+provider+"/backfills", []byte(body),
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// TestBackfillAPI: starting, listing, reading and cancelling a provider's
// backfill jobs, and each refusal with its status.
func TestBackfillAPI(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("acme", "billing")
	e.Provider("globex", "crm")
	write := e.Token("acme")
	read := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	globex := e.Token("globex")
	base := "/api/v1/tenants/acme/providers/crm/backfills"

	status, body := startBackfill(e, write, "crm", `{"since": "72h", "object_type": "contact"}`)
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %v", status, body)
	}
	webtest.AssertKeys(t, body, "id", "provider", "sweep", "from", "to", "object_type", "state", "deliveries", "events",
		"missed", "outcomes", "error", "cancel_requested", "created_by", "created_at", "started_at", "finished_at")
	if body["state"] != "queued" || body["provider"] != "crm" || body["object_type"] != "contact" || body["created_by"] != "test" ||
		body["sweep"] != false || body["started_at"] != nil || body["finished_at"] != nil || body["error"] != nil {
		t.Fatalf("started %v", body)
	}
	assertJSON(t, "outcomes", body["outcomes"], `{}`)
	from, _ := time.Parse(time.RFC3339Nano, body["from"].(string))
	to, _ := time.Parse(time.RFC3339Nano, body["to"].(string))
	if to.Sub(from) != 72*time.Hour || time.Since(to) > time.Minute {
		t.Fatalf("window %v to %v, want the last 72 hours", from, to)
	}
	first := int64(body["id"].(float64))

	// One job per provider queued or running: a second is a conflict
	// naming the first.
	status, body = startBackfill(e, write, "crm", `{"since": 48}`)
	webtest.AssertError(t, status, body, http.StatusConflict, fmt.Sprintf("backfill job %d of provider crm is already queued", first))

	// Cancelling: a queued job ends at once, an ended one is a conflict.
	status, body = e.Post(fmt.Sprintf("%s/%d/cancel", base, first), nil, bearer(read))
	webtest.AssertError(t, status, body, http.StatusForbidden, "read-only")
	status, body = e.Post(fmt.Sprintf("%s/%d/cancel", base, first), nil, bearer(write))
	if status != http.StatusOK || body["state"] != "cancelled" || body["finished_at"] == nil {
		t.Fatalf("cancel queued: %d %v", status, body)
	}
	status, body = e.Post(fmt.Sprintf("%s/%d/cancel", base, first), nil, bearer(write))
	webtest.AssertError(t, status, body, http.StatusConflict, "has already ended (cancelled)")

	// Whole hours as a number or a string; every object type.
	status, body = startBackfill(e, write, "crm", `{"since": 48}`)
	if status != http.StatusAccepted || body["object_type"] != nil {
		t.Fatalf("since 48: %d %v", status, body)
	}
	second := int64(body["id"].(float64))
	if status, body = startBackfill(e, write, "billing", `{"since": "24"}`); status != http.StatusAccepted {
		t.Fatalf("since \"24\": %d %v", status, body)
	}
	billingJob := int64(body["id"].(float64))

	for _, tc := range []struct {
		token, provider, body string
		status                int
		want                  string
	}{
		{write, "crm", `{}`, http.StatusBadRequest, "since is required"},
		{write, "crm", `{"since": "2161h"}`, http.StatusBadRequest, "at most 90 days"},
		{write, "crm", `{"since": 2161}`, http.StatusBadRequest, "at most 90 days"},
		{write, "crm", `{"since": "91d"}`, http.StatusBadRequest, "neither a duration"},
		{write, "crm", `{"since": "-1h"}`, http.StatusBadRequest, "more than 0"},
		{write, "crm", `{"since": "72h", "type": "contact"}`, http.StatusBadRequest, "body must be a JSON object"},
		{write, "crm", `since=72h`, http.StatusBadRequest, "body must be a JSON object"},
		{write, "nope", `{"since": "72h"}`, http.StatusNotFound, "not found"},
		{read, "crm", `{"since": "72h"}`, http.StatusForbidden, "read-only"},
		{globex, "crm", `{"since": "72h"}`, http.StatusNotFound, "not found"},
		{"", "crm", `{"since": "72h"}`, http.StatusUnauthorized, "missing API token"},
	} {
		status, body := startBackfill(e, tc.token, tc.provider, tc.body)
		webtest.AssertError(t, status, body, tc.status, tc.want)
	}

	// Reading: any token of the tenant, newest first.
	status, body = e.Get(base, read)
	if jobs := backfillList(t, status, body); len(jobs) != 2 || jobs[0]["id"] != float64(second) || jobs[1]["id"] != float64(first) {
		t.Fatalf("list %v", jobs)
	}
	status, body = e.Get(base+"?limit=1", read)
	if jobs := backfillList(t, status, body); len(jobs) != 1 || jobs[0]["id"] != float64(second) {
		t.Fatalf("limit 1: %v", jobs)
	}
	status, body = e.Get(base+"?limit=0", read)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "limit must be a positive integer")
	if status, body = e.Get(fmt.Sprintf("%s/%d", base, first), read); status != http.StatusOK || body["id"] != float64(first) {
		t.Fatalf("read job: %d %v", status, body)
	}
	for _, path := range []string{fmt.Sprintf("%s/%d", base, billingJob), base + "/999", base + "/x",
		"/api/v1/tenants/acme/providers/nope/backfills"} {
		status, body = e.Get(path, read)
		webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	}
	status, body = e.Get(fmt.Sprintf("/api/v1/tenants/globex/providers/crm/backfills/%d", first), globex)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")

	// A running job is asked to stop.
	if job, ok, err := e.Store.ClaimBackfill(context.Background()); !ok || err != nil || job.ID != second {
		t.Fatalf("claim: %+v %v %v", job, ok, err)
	}
	status, body = e.Post(fmt.Sprintf("%s/%d/cancel", base, second), nil, bearer(write))
	if status != http.StatusOK || body["state"] != "running" || body["cancel_requested"] != true || body["started_at"] == nil {
		t.Fatalf("cancel running: %d %v", status, body)
	}
	status, body = e.Post(fmt.Sprintf("%s/%d/cancel", base, billingJob), nil, bearer(write))
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")

	want := []string{
		fmt.Sprintf("test backfill_start backfill job %d", first),
		fmt.Sprintf("test backfill_cancel backfill job %d", first),
		fmt.Sprintf("test backfill_start backfill job %d", second),
		fmt.Sprintf("test backfill_start backfill job %d", billingJob),
		fmt.Sprintf("test backfill_cancel backfill job %d", second),
	}
	got := e.Strings(`SELECT actor || ' ' || action || ' ' || target FROM audit_log
		WHERE tenant_id = (SELECT id FROM tenants WHERE slug = 'acme') AND action LIKE 'backfill%' ORDER BY id`)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit %q, want %q", got, want)
	}
}

// backfillList is the jobs of a list's answer, which has no next_cursor.
func backfillList(t *testing.T, status int, body map[string]any) []map[string]any {
	t.Helper()
	webtest.AssertKeys(t, body, "backfills")
	if status != http.StatusOK {
		t.Fatalf("list: %d %v", status, body)
	}
	var out []map[string]any
	for _, j := range body["backfills"].([]any) {
		out = append(out, j.(map[string]any))
	}
	return out
}
