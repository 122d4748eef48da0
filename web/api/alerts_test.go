package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

const alertRulesPath = "/api/v1/tenants/acme/alert-rules"

// TestAlertRulesAPI: every rule with its default; a read-only token reads
// but cannot set; a partial PUT keeps the other fields and is audited with
// the token; an unknown rule is 404, a bad body 400 naming the field.
func TestAlertRulesAPI(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	token := e.Token("acme")
	readOnly := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})

	status, body := e.Get(alertRulesPath, readOnly)
	list := webtest.List(t, status, body, "rules")
	if len(list) != len(alerting.Rules) {
		t.Fatalf("%d rules, want %d", len(list), len(alerting.Rules))
	}
	assertJSON(t, "provider_silent", list[0], `{"rule": "provider_silent", "enabled": true, "threshold": 1, "window": "6h0m0s"}`)
	assertJSON(t, "refusals", list[1], `{"rule": "refusals", "enabled": true, "threshold": 20, "window": "5m0s"}`)

	status, body = e.Get(alertRulesPath+"/refusals", readOnly)
	if status != http.StatusOK {
		t.Fatalf("get: %d %v", status, body)
	}
	assertJSON(t, "get", body, `{"rule": "refusals", "enabled": true, "threshold": 20, "window": "5m0s"}`)

	status, body = destinationCall(e, http.MethodPut, alertRulesPath+"/refusals", readOnly, `{"threshold": 5}`)
	webtest.AssertError(t, status, body, http.StatusForbidden, "read-write token")

	status, body = destinationCall(e, http.MethodPut, alertRulesPath+"/refusals", token, `{"threshold": 50, "window": "90s"}`)
	if status != http.StatusOK {
		t.Fatalf("put: %d %v", status, body)
	}
	assertJSON(t, "put", body, `{"rule": "refusals", "enabled": true, "threshold": 50, "window": "1m30s"}`)
	status, body = destinationCall(e, http.MethodPut, alertRulesPath+"/refusals", token, `{"enabled": false}`)
	if status != http.StatusOK {
		t.Fatalf("put: %d %v", status, body)
	}
	assertJSON(t, "disabled", body, `{"rule": "refusals", "enabled": false, "threshold": 50, "window": "1m30s"}`)
	if status, body = e.Get(alertRulesPath+"/refusals", token); status != http.StatusOK {
		t.Fatalf("read back: %d %v", status, body)
	}
	assertJSON(t, "read back", body, `{"rule": "refusals", "enabled": false, "threshold": 50, "window": "1m30s"}`)
	if status, body = e.Get("/api/v1/tenants/globex/alert-rules/refusals", e.Token("globex")); body["threshold"] != float64(20) {
		t.Errorf("another tenant's rule: %d %v", status, body)
	}

	audit := e.Strings(`SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
WHERE action = 'alert_rule_set' ORDER BY id`)
	want := []string{
		"test alert_rule_set alert rule refusals: enabled, threshold 50, window 1m30s (was enabled, threshold 20, window 5m0s)",
		"test alert_rule_set alert rule refusals: disabled, threshold 50, window 1m30s (was enabled, threshold 50, window 1m30s)",
	}
	if len(audit) != 2 || audit[0] != want[0] || audit[1] != want[1] {
		t.Errorf("audit %q, want %q", audit, want)
	}

	status, body = e.Get(alertRulesPath+"/nope", token)
	webtest.AssertError(t, status, body, http.StatusNotFound, `no alert rule "nope"`)
	for _, c := range []struct{ rule, body, want string }{
		{"nope", `{"threshold": 5}`, `no alert rule "nope"`},
		{"refusals", `{"window": "soon"}`, "window must be a duration"},
		{"refusals", `{"window": "30s"}`, "window must be from 1m0s"},
		{"refusals", `{"window": 60}`, "window must be a duration"},
		{"refusals", `{"threshold": 0}`, "threshold must be at least 1"},
		{"refusals", `{"threshold": "5"}`, "threshold must be a whole number"},
		{"refusals", `{"threshold": 1.5}`, "threshold must be a whole number"},
		{"refusals", `{"enabled": "yes"}`, "enabled must be true or false"},
		{"refusals", `{"limit": 5}`, `unknown field "limit"`},
		{"refusals", `[]`, "body must be a JSON object"},
	} {
		status, body = destinationCall(e, http.MethodPut, alertRulesPath+"/"+c.rule, token, c.body)
		code := http.StatusBadRequest
		if c.rule == "nope" {
			code = http.StatusNotFound
		}
		webtest.AssertError(t, status, body, code, c.want)
	}
	if n := len(e.Strings(`SELECT action FROM audit_log WHERE action = 'alert_rule_set'`)); n != 2 {
		t.Errorf("%d changes audited after refused ones, want 2", n)
	}
}

// TestAlertsAPI: the tenant's alerts newest first with every field, by
// state, in keyset pages, for any token; another tenant's alerts never; a
// bad state is 400.
func TestAlertsAPI(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	readOnly := e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead})
	base := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	resolvedAt := base.Add(time.Hour)
	old := webtest.FireAlert(e, "acme", alerting.Refusals, "crm", "crm had 21 refused deliveries in 5m0s.", base, &resolvedAt)
	firing := webtest.FireAlert(e, "acme", alerting.ConflictsOpen, "", "2 revision conflicts are open.", base.Add(2*time.Hour), nil)
	webtest.FireAlert(e, "globex", alerting.Refusals, "crm", "globex's alert.", base.Add(3*time.Hour), nil)

	status, body := e.Get("/api/v1/tenants/acme/alerts", readOnly)
	list := webtest.List(t, status, body, "alerts")
	if len(list) != 2 || list[0]["id"] != float64(firing) || list[1]["id"] != float64(old) || body["next_cursor"] != nil {
		t.Fatalf("alerts %v", body)
	}
	assertJSON(t, "firing", list[0], `{"id": `+strconv.FormatInt(firing, 10)+`, "rule": "conflicts_open", "provider": null,
		"summary": "2 revision conflicts are open.", "value": 21, "threshold": 20, "window": "5m0s",
		"started_at": "2026-11-02T11:00:00Z", "resolved_at": null, "state": "firing"}`)
	assertJSON(t, "resolved", list[1], `{"id": `+strconv.FormatInt(old, 10)+`, "rule": "refusals", "provider": "crm",
		"summary": "crm had 21 refused deliveries in 5m0s.", "value": 0, "threshold": 20, "window": "5m0s",
		"started_at": "2026-11-02T09:00:00Z", "resolved_at": "2026-11-02T10:00:00Z", "state": "resolved"}`)

	for state, want := range map[string]int64{"firing": firing, "resolved": old} {
		status, body = e.Get("/api/v1/tenants/acme/alerts?state="+state, readOnly)
		if list := webtest.List(t, status, body, "alerts"); len(list) != 1 || list[0]["id"] != float64(want) {
			t.Errorf("state=%s: %v", state, list)
		}
	}
	status, body = e.Get("/api/v1/tenants/acme/alerts?limit=1", readOnly)
	list = webtest.List(t, status, body, "alerts")
	next, _ := body["next_cursor"].(string)
	if len(list) != 1 || next == "" {
		t.Fatalf("first page %v", body)
	}
	status, body = e.Get("/api/v1/tenants/acme/alerts?limit=1&cursor="+next, readOnly)
	if list = webtest.List(t, status, body, "alerts"); len(list) != 1 || list[0]["id"] != float64(old) || body["next_cursor"] != nil {
		t.Errorf("second page %v", body)
	}

	status, body = e.Get("/api/v1/tenants/acme/alerts?state=open", readOnly)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "state must be firing or resolved")
}
