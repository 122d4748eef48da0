package web_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// sample is a provider's sample delivery as sent, with extra headers.
type sample struct {
	secret  string
	query   string
	headers map[string]string // as sent, extra ones included
	status  int
}

// sendSample connects a provider of kind to acme and posts the kind's
// sample delivery (provider.TestDelivery) with extra headers.
func (e *env) sendSample(kind, name string, config map[string]string, extra map[string]string) sample {
	e.t.Helper()
	k, _ := provider.Lookup(kind)
	secret, config, err := provider.Setup(kind, "", config)
	if err != nil { // a kind whose secret the provider issues
		if secret, err = k.NewSecret(config); err == nil {
			secret, config, err = provider.Setup(kind, secret, config)
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.ConnectProvider(cliContext(), e.tenant("acme").ID, name, kind, secret, config); err != nil {
		e.t.Fatal(err)
	}
	path := "/webhooks/acme/" + name
	d, err := k.TestDelivery(e.srv.URL+path, secret, config, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	s := sample{secret: secret, query: d.Query, headers: map[string]string{"Content-Type": "application/json"}}
	if d.ContentType != "" {
		s.headers["Content-Type"] = d.ContentType
	}
	for _, h := range []map[string]string{d.Headers, extra} {
		for k, v := range h {
			s.headers[k] = v
		}
	}
	if d.Query != "" {
		path += "?" + d.Query
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(string(d.Body)))
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	s.status = resp.StatusCode
	return s
}

// signedWithHeaders delivers body to acme/crm signed as event id, with
// extra headers, and returns the delivery's id.
func (e *env) signedWithHeaders(id string, body []byte, extra map[string]string) string {
	e.t.Helper()
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.secret, id, ts, body)
	if err != nil {
		e.t.Fatal(err)
	}
	headers := map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig}
	for k, v := range extra {
		headers[k] = v
	}
	status, answer := e.post("/webhooks/acme/crm", body, headers)
	outcome(e.t, status, answer)
	return answer["delivery_id"].(string)
}

// latestDelivery returns the API's view of the newest delivery of a
// provider of acme, and its raw JSON.
func (e *env) latestDelivery(token, providerName string) (map[string]any, string) {
	e.t.Helper()
	status, body := e.get("/api/v1/tenants/acme/deliveries?limit=1&provider="+providerName, token)
	items := list(e.t, status, body, "deliveries")
	if len(items) != 1 {
		e.t.Fatalf("no delivery of %s", providerName)
	}
	return e.deliveryJSON(token, items[0]["id"].(string))
}

// deliveryJSON fetches one delivery from the API, decoded and raw.
func (e *env) deliveryJSON(token, id string) (map[string]any, string) {
	e.t.Helper()
	status, body := e.get("/api/v1/tenants/acme/deliveries/"+id, token)
	if status != http.StatusOK {
		e.t.Fatalf("GET delivery %s: %d %v", id, status, body)
	}
	raw, _ := json.Marshal(body)
	return body, string(raw)
}

// TestInspectorRedactsCredentials: every kind's signature and token
// headers, the generic credential headers and the query token are kept as
// their first 4 characters; every other header and parameter is kept as
// sent, and no credential appears whole anywhere in the answer.
func TestInspectorRedactsCredentials(t *testing.T) {
	t.Parallel()
	e := setup(t)
	token := e.token("acme")
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
		{"salesforce", "sf", map[string]string{"org_id": sfOrg}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// e's helpers fail the parent test, so the cases run in turn.
			sent := e.sendSample(tc.kind, tc.name, tc.config, extra)
			if sent.status != http.StatusOK {
				t.Fatalf("sample delivery answered %d", sent.status)
			}
			d, raw := e.latestDelivery(token, tc.name)
			headers := d["headers"].(map[string]any)
			secretHeaders := map[string]bool{"Authorization": true, "Cookie": true, "X-Api-Key": true}
			for _, h := range tc.redacted {
				secretHeaders[h] = true
			}
			for name, value := range sent.headers {
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
			wantQuery := sent.query
			if tc.queryToken {
				q, _ := url.ParseQuery(sent.query)
				tok := q.Get("token")
				wantQuery = "token=" + domain.RedactValue(tok)
				if strings.Contains(raw, tok) || strings.Contains(raw, sent.secret) {
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
	e := setup(t)
	token := e.token("acme")
	body := snapshotBody("c-1", 1, `{"job_title":"CTO"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	forged := "v1,Zm9yZ2VkIHNpZ25hdHVyZSBvZiAzMiBieXRlcyEhIQ=="
	status, _ := e.post("/webhooks/acme/crm", body, map[string]string{"webhook-id": "m1", "webhook-timestamp": ts,
		"webhook-signature": forged})
	if status != http.StatusUnauthorized {
		t.Fatalf("forged delivery answered %d", status)
	}
	e.flushRefusals()
	d, _ := e.latestDelivery(token, "crm")
	if d["status"] != float64(401) || d["signature"] != "invalid" || d["body"] != nil || d["body_encoding"] != nil {
		t.Fatalf("refused delivery: status %v signature %v body %v", d["status"], d["signature"], d["body"])
	}
	headers := d["headers"].(map[string]any)
	assertJSON(t, "signature header", headers["Webhook-Signature"], `["v1,Z…"]`)
	assertJSON(t, "id header", headers["Webhook-Id"], `["m1"]`)

	status, answer := e.post("/api/v1/tenants/acme/deliveries/"+d["id"].(string)+"/replay", nil,
		map[string]string{"Authorization": "Bearer " + token})
	assertError(t, status, answer, http.StatusConflict, "its body was not kept")
}

// TestAPIDeliveries checks the shapes of the delivery list and of one
// delivery, keyset pages, filters, a body that is not text, and tenant
// isolation.
func TestAPIDeliveries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	token := e.token("acme")
	first := snapshotBody("c-1", 1, `{"job_title":"CTO"}`)
	_, answer := e.deliver1("m1", first)
	id1 := answer["delivery_id"].(string)
	e.deliver1("m2", snapshotBody("c-1", 2, `{"job_title":"CEO"}`))
	e.deliver1("m3", []byte(`{"type":"contact.snapshot","data":{"revision":3}}`)) // rejected: no contact_id
	// An authenticated body that is not UTF-8 is refused (400) and kept.
	if status, _ := e.deliver1("m4", []byte("\xff\xfe{}")); status != http.StatusBadRequest {
		t.Fatalf("non-UTF-8 body answered %d", status)
	}
	e.flushRefusals()

	d, _ := e.deliveryJSON(token, id1)
	assertKeys(t, d, "id", "provider", "received_at", "status", "signature", "reason", "event_count", "replay_of",
		"method", "path", "query", "headers", "truncated", "client_address", "body", "body_encoding", "events", "replays")
	assertTime(t, d, "received_at")
	if d["id"] != id1 || d["provider"] != "crm" || d["status"] != float64(200) || d["body"] != string(first) ||
		d["body_encoding"] != "utf-8" || d["replay_of"] != nil || d["client_address"] != "127.0.0.1" {
		t.Fatalf("delivery %v", d)
	}
	events := d["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("events %v", events)
	}
	ev := events[0].(map[string]any)
	assertKeys(t, ev, "event_id", "outcome", "reason", "object_type", "object_id")
	assertJSON(t, "event", ev, `{"event_id": "m1", "outcome": "applied", "reason": null, "object_type": "contact", "object_id": "c-1"}`)

	status, body := e.get("/api/v1/tenants/acme/deliveries?limit=2", token)
	page1 := list(t, status, body, "deliveries")
	assertKeys(t, page1[0], "id", "provider", "received_at", "status", "signature", "reason", "event_count", "replay_of")
	if page1[0]["status"] != float64(400) || body["next_cursor"] == nil {
		t.Fatalf("first page %v, next %v", page1, body["next_cursor"])
	}
	binary, _ := e.deliveryJSON(token, page1[0]["id"].(string))
	if binary["body_encoding"] != "base64" || binary["body"] != base64.StdEncoding.EncodeToString([]byte("\xff\xfe{}")) {
		t.Fatalf("binary body %v (%v)", binary["body"], binary["body_encoding"])
	}
	status, body = e.get("/api/v1/tenants/acme/deliveries?limit=2&cursor="+url.QueryEscape(body["next_cursor"].(string)), token)
	page2 := list(t, status, body, "deliveries")
	if len(page2) != 2 || body["next_cursor"] != nil || page2[1]["id"] != id1 {
		t.Fatalf("second page %v, next %v", page2, body["next_cursor"])
	}
	for query, want := range map[string]int{"status=200": 3, "status=400": 1, "outcome=rejected": 1,
		"outcome=applied&provider=crm": 2, "provider=nope": 0} {
		status, body := e.get("/api/v1/tenants/acme/deliveries?"+query, token)
		if got := len(list(t, status, body, "deliveries")); got != want {
			t.Errorf("?%s: %d deliveries, want %d", query, got, want)
		}
	}
	status, body = e.get("/api/v1/tenants/acme/deliveries?status=ok", token)
	assertError(t, status, body, http.StatusBadRequest, "status must be an HTTP status")
	status, body = e.get("/api/v1/tenants/acme/deliveries?from=yesterday", token)
	assertError(t, status, body, http.StatusBadRequest, "RFC 3339")

	// Another tenant's delivery, an unknown id and a malformed one are 404.
	other := e.provider("other", "crm")
	_, answer = e.deliver("other", "crm", other, "x1", first)
	for _, id := range []string{answer["delivery_id"].(string), "01900000-0000-7000-8000-000000000000", "nope"} {
		status, body := e.get("/api/v1/tenants/acme/deliveries/"+id, token)
		assertError(t, status, body, http.StatusNotFound, "not found")
	}
}
