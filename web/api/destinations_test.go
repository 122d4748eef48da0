package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

const destinationsPath = "/api/v1/tenants/acme/destinations"

// destinationCall sends method path with token and a JSON body ("" for none).
func destinationCall(e *webtest.Env, method, path, token, body string) (int, map[string]any) {
	e.T.Helper()
	req, _ := http.NewRequest(method, e.Srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return e.Do(req)
}

var destinationKeys = []string{"id", "kind", "url", "nats_url", "subject", "nats_auth", "nats_tls_ca", "provider", "object_type", "types", "format", "filter", "transform", "max_in_flight",
	"status", "status_reason", "cursor", "behind_retention", "filtered", "pending", "oldest_pending_at", "lag_seconds", "created_at", "last_success_at"}

// TestDestinationAPI: create shows the secret once; get, list, pause,
// resume, rewind, rotate and delete, each audited with the token.
func TestDestinationAPI(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")

	status, body := destinationCall(e, http.MethodPost, destinationsPath, token,
		`{"url": "https://203.0.113.10/tidemark", "provider": "crm", "object_type": "contact", "types": ["record.applied"], "max_in_flight": 4}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	webtest.AssertKeys(t, body, append([]string{"secret"}, destinationKeys...)...)
	secret, _ := body["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q", secret)
	}
	id := int64(body["id"].(float64))
	delete(body, "secret")
	delete(body, "created_at")
	assertJSON(t, "created", body, fmt.Sprintf(`{"id": %d, "kind": "webhook", "url": "https://203.0.113.10/tidemark", "nats_url": null,
		"subject": null, "nats_auth": null, "nats_tls_ca": false, "provider": "crm", "object_type": "contact", "types": ["record.applied"], "format": "standard",
		"filter": null, "transform": null, "max_in_flight": 4, "status": "active", "status_reason": null, "cursor": "c1_0", "behind_retention": false,
		"filtered": 0, "pending": 0, "oldest_pending_at": null,
		"lag_seconds": null, "last_success_at": null}`, id))

	one := fmt.Sprintf("%s/%d", destinationsPath, id)
	status, body = e.Get(one, token)
	if status != http.StatusOK || body["secret"] != nil || body["id"] != float64(id) {
		t.Fatalf("get: %d %v; want the destination without its secret", status, body)
	}
	webtest.AssertKeys(t, body, destinationKeys...)
	status, body = e.Get(destinationsPath, token)
	if list := webtest.List(t, status, body, "destinations"); len(list) != 1 || list[0]["secret"] != nil {
		t.Fatalf("list %v", list)
	}

	seed := userSeed(t)
	status, body = destinationCall(e, http.MethodPost, destinationsPath, token,
		`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm.changes", "nats_nkey": "`+seed+`"}`)
	if status != http.StatusCreated || body["kind"] != "nats" || body["nats_url"] != "nats://203.0.113.11:4222" || body["subject"] != "crm.changes" ||
		body["nats_auth"] != "nkey" || body["nats_tls_ca"] != false ||
		body["url"] != nil || body["max_in_flight"] != float64(stream.DefaultMaxInFlight) {
		t.Fatalf("create NATS: %d %v", status, body)
	}
	status, body = e.Get(fmt.Sprintf("%s/%d", destinationsPath, int64(body["id"].(float64))), token)
	if status != http.StatusOK || body["nats_auth"] != "nkey" || strings.Contains(fmt.Sprint(body), seed) {
		t.Fatalf("get NATS: %d %v; want its kind of credentials, never them", status, body)
	}

	for _, step := range []struct{ action, body, status string }{
		{"pause", "", "paused"},
		{"resume", "", "active"},
		{"rewind", `{"after": ""}`, "active"},
	} {
		status, body = destinationCall(e, http.MethodPost, one+"/"+step.action, token, step.body)
		if status != http.StatusOK || body["status"] != step.status || body["id"] != float64(id) {
			t.Fatalf("%s: %d %v", step.action, status, body)
		}
	}
	status, body = destinationCall(e, http.MethodPost, one+"/rewind", token, `{"after": "c1_5"}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "past the newest change")
	status, body = destinationCall(e, http.MethodPost, one+"/rewind", token, `{"after": "42"}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "not a cursor of this feed")
	status, body = destinationCall(e, http.MethodPost, one+"/rewind", token, `{}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "after is required")

	status, body = destinationCall(e, http.MethodPost, one+"/rotate", token, "")
	if status != http.StatusOK || body["secret"] == secret || !strings.HasPrefix(body["secret"].(string), "whsec_") {
		t.Fatalf("rotate: %d %v", status, body)
	}
	webtest.AssertKeys(t, body, "secret")

	status, body = e.Get(one+"/attempts", token)
	if attempts := webtest.List(t, status, body, "attempts"); len(attempts) != 0 {
		t.Fatalf("attempts %v", attempts)
	}

	if status, body = destinationCall(e, http.MethodDelete, one, token, ""); status != http.StatusNoContent {
		t.Fatalf("delete: %d %v", status, body)
	}
	status, body = e.Get(one, token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")

	audit := e.Strings(`SELECT actor || ' ' || action || ': ' || summary FROM audit_log WHERE action LIKE 'destination%' ORDER BY id`)
	if len(audit) != 7 || !strings.HasPrefix(audit[0], "test destination_create: https://203.0.113.10/tidemark;") ||
		!strings.HasPrefix(audit[6], "test destination_delete:") {
		t.Fatalf("audit %q", audit)
	}
	if strings.Contains(strings.Join(audit, "\n"), "whsec_") {
		t.Fatal("the audit log holds a secret")
	}
}

// userSeed is a new NATS user's nkey seed.
func userSeed(t *testing.T) string {
	t.Helper()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	return string(seed)
}

// TestDestinationAPIRefusals: what the API refuses, and to whom.
func TestDestinationAPIRefusals(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	seed := userSeed(t)
	for _, tc := range []struct{ body, want string }{
		{`{"url": "http://127.0.0.1/x"}`, "url: host 127.0.0.1 is a loopback address"},
		{`{"url": "http://localhost:8080/x"}`, "url: host localhost resolves to"},
		{`{"url": "http://169.254.169.254/"}`, "url: host 169.254.169.254 is a link-local address"},
		{`{"nats_url": "nats://10.0.0.5:4222", "subject": "crm", "nats_nkey": "` + seed + `"}`, "nats_url: host 10.0.0.5 is a private address"},
		// Review 4's M6: a NATS destination without credentials would only
		// work with a server that admits anyone.
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm"}`, "nats_url needs credentials"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm", "nats_tls_ca": "x"}`, "nats_url needs credentials"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm", "nats_nkey": "` + seed + `", "nats_creds": "x"}`, "not both"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm", "nats_nkey": "SUNOTASEED"}`, "nats_nkey is not a user nkey seed"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm", "nats_creds": "x"}`, "nats_creds: its user JWT does not decode"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm", "nats_nkey": "` + seed + `", "nats_tls_ca": "x"}`, "nats_tls_ca holds no PEM certificate"},
		{`{"url": "https://203.0.113.10/", "nats_nkey": "` + seed + `"}`, "go with nats_url"},
		{`{"url": "https://203.0.113.10/", "allow_private": true}`, "body must be a JSON object"},
		{`{"url": "https://203.0.113.10/", "types": ["record.created"]}`, `"record.created" is not a change type`},
		{`{"url": "https://203.0.113.10/", "types": "record.*"}`, "body must be a JSON object"},
		{`{"url": "https://203.0.113.10/", "max_in_flight": 0}`, "max_in_flight must be from 1 to 64"},
		{`{"url": "https://203.0.113.10/", "max_in_flight": 65}`, "max_in_flight must be from 1 to 64"},
		{`{"url": "ftp://203.0.113.10/"}`, "http or https"},
		{`{"url": "https://203.0.113.10/", "nats_url": "nats://203.0.113.11:4222", "subject": "a"}`, "not both"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "crm.>", "nats_nkey": "` + seed + `"}`, "wildcards"},
		{`{"url": "https://203.0.113.10/", "provider": "nope"}`, `provider "nope"`},
		{`{"url": "https://203.0.113.10/", "format": "slack", "types": ["record.*"]}`, "format slack takes alert types only"},
		{`{"url": "https://203.0.113.10/", "format": "teams"}`, "format must be standard or slack"},
		{`{"nats_url": "nats://203.0.113.11:4222", "subject": "a", "types": ["alert.*"]}`, "alert types are sent to url destinations only"},
		// A kind given must agree with the fields.
		{`{"kind": "teams", "url": "https://203.0.113.10/"}`, `kind "teams" is not a destination kind: one of nats, slack, webhook`},
		{`{"kind": "nats", "url": "https://203.0.113.10/"}`, "kind nats takes nats_url and subject, not url"},
		{`{"kind": "slack", "nats_url": "nats://203.0.113.11:4222", "subject": "a", "nats_nkey": "` + seed + `"}`, "kind slack takes url, not nats_url and subject"},
		{`{"kind": "webhook", "url": "https://203.0.113.10/", "format": "slack"}`, "kind webhook sends format standard, not slack"},
		{`{"kind": "slack", "url": "https://203.0.113.10/", "format": "standard"}`, "kind slack sends format slack, not standard"},
		{`{"kind": "webhook"}`, "kind webhook needs url"},
	} {
		status, body := destinationCall(e, http.MethodPost, destinationsPath, token, tc.body)
		webtest.AssertError(t, status, body, http.StatusBadRequest, tc.want)
	}
	if n := e.Strings(`SELECT id::text FROM destinations`); len(n) != 0 {
		t.Fatalf("refused requests stored destinations %v", n)
	}

	status, body := destinationCall(e, http.MethodPost, destinationsPath, token, `{"url": "https://203.0.113.10/"}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	one := fmt.Sprintf("%s/%d", destinationsPath, int64(body["id"].(float64)))

	readOnly := e.TokenWith("acme", domain.NewAPIToken{Name: "r", Access: domain.TokenRead})
	for _, rt := range []struct{ method, path, body string }{
		{http.MethodGet, destinationsPath, ""},
		{http.MethodGet, one, ""},
		{http.MethodPost, destinationsPath, `{"url": "https://203.0.113.10/"}`},
		{http.MethodPost, one + "/pause", ""},
		{http.MethodDelete, one, ""},
	} {
		status, body := destinationCall(e, rt.method, rt.path, readOnly, rt.body)
		webtest.AssertError(t, status, body, http.StatusForbidden, "read-write token")
	}

	e.Provider("globex", "crm")
	globex := e.Token("globex")
	status, body = destinationCall(e, http.MethodPost, one+"/pause", globex, "")
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	status, body = destinationCall(e, http.MethodGet, strings.Replace(one, "/acme/", "/globex/", 1), globex, "")
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	status, body = destinationCall(e, http.MethodDelete, strings.Replace(one, "/acme/", "/globex/", 1), globex, "")
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	status, body = e.Get(one, token)
	if status != http.StatusOK || body["status"] != "active" {
		t.Fatalf("after the other tenant's tries: %d %v", status, body)
	}
}

// TestDestinationAPIAlerts: a destination of alert types in the slack
// format, created and shown with its format; its attempts name the alert
// event's type and webhook-id.
func TestDestinationAPIAlerts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	status, body := destinationCall(e, http.MethodPost, destinationsPath, token, `{"url": "https://203.0.113.10/slack", "format": "slack"}`)
	if status != http.StatusCreated || body["kind"] != "slack" || body["format"] != "slack" || fmt.Sprint(body["types"]) != "[alert.*]" {
		t.Fatalf("create slack: %d %v; want kind and format slack with types alert.*", status, body)
	}
	id := int64(body["id"].(float64))
	status, body = destinationCall(e, http.MethodPost, destinationsPath, token,
		`{"url": "https://203.0.113.10/both", "types": ["record.*", "alert.fired"]}`)
	if status != http.StatusCreated || body["kind"] != "webhook" || body["format"] != "standard" || fmt.Sprint(body["types"]) != "[record.* alert.fired]" {
		t.Fatalf("create with both: %d %v", status, body)
	}
	// The kind given rather than implied by the format: the same slack
	// destination.
	status, body = destinationCall(e, http.MethodPost, destinationsPath, token, `{"kind": "slack", "url": "https://203.0.113.10/slack2"}`)
	if status != http.StatusCreated || body["kind"] != "slack" || body["format"] != "slack" || fmt.Sprint(body["types"]) != "[alert.*]" {
		t.Fatalf("create kind slack: %d %v; want format slack with types alert.*", status, body)
	}
	tenant := e.Tenant("acme").ID
	e.Exec(fmt.Sprintf(`
		WITH a AS (INSERT INTO alerts (tenant_id, rule, summary, value, threshold, window_seconds, started_at)
		           VALUES (%[1]d, 'refusals', 's', 1, 1, 300, now()) RETURNING id),
		     ev AS (INSERT INTO alert_events (tenant_id, alert_id, type, at) SELECT %[1]d, id, 'alert.fired', now() FROM a RETURNING id)
		INSERT INTO destination_attempts (tenant_id, destination_id, position, status, error, duration_ms)
		SELECT %[1]d, %[2]d, id + %[3]d, 503, 'answered 503 Service Unavailable', 12 FROM ev`, tenant, id, (0 + stream.AlertQueueBase)))
	status, body = e.Get(fmt.Sprintf("%s/%d/attempts", destinationsPath, id), token)
	attempts := webtest.List(t, status, body, "attempts")
	if len(attempts) != 1 || attempts[0]["type"] != "alert.fired" ||
		!strings.HasPrefix(fmt.Sprint(attempts[0]["change_id"]), fmt.Sprintf("alert_%d_", tenant)) || attempts[0]["status"] != float64(503) {
		t.Fatalf("attempts %v; want the alert.fired attempt by its webhook-id", attempts)
	}
}
