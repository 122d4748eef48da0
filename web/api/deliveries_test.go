package api_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestInspectorRedactsCredentials: every kind's signature and token
// headers, the generic credential headers and the query token are kept as
// their first 4 characters; every other header and parameter is kept as
// sent, and no credential appears whole anywhere in the answer.
func TestInspectorRedactsCredentials(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	extra := map[string]string{
		"Authorization": "Bearer sk_live_0123456789abcdef", "Cookie": "session=0123456789abcdef",
		"X-Api-Key": "key_0123456789abcdef", "User-Agent": "Provider-Hookshot/2.1", "X-Request-Id": "req-42",
	}
	for _, tc := range []struct {
		kind, name string
		config     map[string]string
		redacted   []string // headers the kind signs with
		queryToken bool
	}{
		{"standard", "std", nil, []string{"Webhook-Signature"}, false},
		{"hubspot", "hs", nil, []string{"X-Hubspot-Signature-V3"}, false},
		{"shippo", "ship", map[string]string{"auth": "hmac"}, []string{"Shippo-Auth-Signature"}, false},
		{"shippo", "shiptok", map[string]string{"auth": "token"}, nil, true},
		{"salesforce", "sf", map[string]string{"org_id": webtest.SfOrg}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// e's helpers fail the parent test, so the cases run in turn.
			sent := e.SendSample(tc.kind, tc.name, tc.config, extra)
			if sent.Status != http.StatusOK {
				t.Fatalf("sample delivery answered %d", sent.Status)
			}
			d, raw := e.LatestDelivery(token, tc.name)
			headers := d["headers"].(map[string]any)
			secretHeaders := map[string]bool{"Authorization": true, "Cookie": true, "X-Api-Key": true}
			for _, h := range tc.redacted {
				secretHeaders[h] = true
			}
			for name, value := range sent.Headers {
				canonical := http.CanonicalHeaderKey(name)
				got, _ := headers[canonical].([]any)
				if len(got) != 1 {
					t.Errorf("header %s: %v, want one value", canonical, headers[canonical])
					continue
				}
				want := value
				if secretHeaders[canonical] {
					want = domain.RedactValue(value)
					if strings.Contains(raw, value) {
						t.Errorf("the answer holds %s whole: %s", canonical, value)
					}
				}
				if got[0] != want {
					t.Errorf("header %s = %q, want %q", canonical, got[0], want)
				}
			}
			wantQuery := sent.Query
			if tc.queryToken {
				q, _ := url.ParseQuery(sent.Query)
				tok := q.Get("token")
				wantQuery = "token=" + domain.RedactValue(tok)
				if strings.Contains(raw, tok) || strings.Contains(raw, sent.Secret) {
					t.Errorf("the answer holds the URL token %s", tok)
				}
			}
			if got, _ := d["query"].(string); got != wantQuery {
				t.Errorf("query %q, want %q", got, wantQuery)
			}
			if d["method"] != "POST" || d["path"] != "/webhooks/acme/"+tc.name || d["signature"] != "valid" {
				t.Errorf("method %v path %v signature %v", d["method"], d["path"], d["signature"])
			}
			if d["body"] == nil || d["body_encoding"] != "utf-8" {
				t.Errorf("body %v (%v), want the body as text", d["body"], d["body_encoding"])
			}
		})
	}
}

// TestInspectorRefusedDelivery: a delivery refused for its signature keeps
// its request, credentials redacted, but not its body, and cannot be
// replayed.
func TestInspectorRefusedDelivery(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	body := webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	forged := "v1,Zm9yZ2VkIHNpZ25hdHVyZSBvZiAzMiBieXRlcyEhIQ=="
	status, _ := e.Post("/webhooks/acme/crm", body, map[string]string{"webhook-id": "m1", "webhook-timestamp": ts,
		"webhook-signature": forged})
	if status != http.StatusUnauthorized {
		t.Fatalf("forged delivery answered %d", status)
	}
	e.FlushRefusals()
	d, _ := e.LatestDelivery(token, "crm")
	if d["status"] != float64(401) || d["signature"] != "invalid" || d["body"] != nil || d["body_encoding"] != nil {
		t.Fatalf("refused delivery: status %v signature %v body %v", d["status"], d["signature"], d["body"])
	}
	headers := d["headers"].(map[string]any)
	assertJSON(t, "signature header", headers["Webhook-Signature"], `["v1,Z…"]`)
	assertJSON(t, "id header", headers["Webhook-Id"], `["m1"]`)

	status, answer := e.Post("/api/v1/tenants/acme/deliveries/"+d["id"].(string)+"/replay", nil,
		map[string]string{"Authorization": "Bearer " + token})
	webtest.AssertError(t, status, answer, http.StatusConflict, "its body was not kept")
}

// TestAPIDeliveries checks the shapes of the delivery list and of one
// delivery, keyset pages, filters, a body that is not text, and tenant
// isolation.
func TestAPIDeliveries(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	first := webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`)
	_, answer := e.Deliver1("m1", first)
	id1 := answer["delivery_id"].(string)
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 2, `{"job_title":"CEO"}`))
	e.Deliver1("m3", []byte(`{"type":"contact.snapshot","data":{"revision":3}}`)) // rejected: no contact_id
	// An authenticated body that is not UTF-8 is refused (400) and kept.
	if status, _ := e.Deliver1("m4", []byte("\xff\xfe{}")); status != http.StatusBadRequest {
		t.Fatalf("non-UTF-8 body answered %d", status)
	}
	e.FlushRefusals()

	d, _ := e.DeliveryJSON(token, id1)
	webtest.AssertKeys(t, d, "id", "provider", "received_at", "status", "signature", "reason", "event_count", "replay_of", "source",
		"method", "path", "query", "headers", "truncated", "client_address", "body", "body_encoding", "events", "replays", "replays_next_cursor")
	assertTime(t, d, "received_at")
	if d["source"] != "webhook" {
		t.Errorf("source %v, want webhook", d["source"])
	}
	if d["id"] != id1 || d["provider"] != "crm" || d["status"] != float64(200) || d["body"] != string(first) ||
		d["body_encoding"] != "utf-8" || d["replay_of"] != nil || d["client_address"] != "127.0.0.1" {
		t.Fatalf("delivery %v", d)
	}
	events := d["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("events %v", events)
	}
	ev := events[0].(map[string]any)
	webtest.AssertKeys(t, ev, "event_id", "outcome", "reason", "object_type", "object_id")
	assertJSON(t, "event", ev, `{"event_id": "m1", "outcome": "applied", "reason": null, "object_type": "contact", "object_id": "c-1"}`)

	status, body := e.Get("/api/v1/tenants/acme/deliveries?limit=2", token)
	page1 := webtest.List(t, status, body, "deliveries")
	webtest.AssertKeys(t, page1[0], "id", "provider", "received_at", "status", "signature", "reason", "event_count", "replay_of", "source")
	if page1[0]["status"] != float64(400) || body["next_cursor"] == nil {
		t.Fatalf("first page %v, next %v", page1, body["next_cursor"])
	}
	binary, _ := e.DeliveryJSON(token, page1[0]["id"].(string))
	if binary["body_encoding"] != "base64" || binary["body"] != base64.StdEncoding.EncodeToString([]byte("\xff\xfe{}")) {
		t.Fatalf("binary body %v (%v)", binary["body"], binary["body_encoding"])
	}
	status, body = e.Get("/api/v1/tenants/acme/deliveries?limit=2&cursor="+url.QueryEscape(body["next_cursor"].(string)), token)
	page2 := webtest.List(t, status, body, "deliveries")
	if len(page2) != 2 || body["next_cursor"] != nil || page2[1]["id"] != id1 {
		t.Fatalf("second page %v, next %v", page2, body["next_cursor"])
	}
	for query, want := range map[string]int{"status=200": 3, "status=400": 1, "outcome=rejected": 1,
		"outcome=applied&provider=crm": 2, "provider=nope": 0} {
		status, body := e.Get("/api/v1/tenants/acme/deliveries?"+query, token)
		if got := len(webtest.List(t, status, body, "deliveries")); got != want {
			t.Errorf("?%s: %d deliveries, want %d", query, got, want)
		}
	}
	status, body = e.Get("/api/v1/tenants/acme/deliveries?status=ok", token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "status must be an HTTP status")
	status, body = e.Get("/api/v1/tenants/acme/deliveries?from=yesterday", token)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "RFC 3339")

	// Another tenant's delivery, an unknown id and a malformed one are 404.
	other := e.Provider("other", "crm")
	_, answer = e.Deliver("other", "crm", other, "x1", first)
	for _, id := range []string{answer["delivery_id"].(string), "01900000-0000-7000-8000-000000000000", "nope"} {
		status, body := e.Get("/api/v1/tenants/acme/deliveries/"+id, token)
		webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
	}
}
