package hook_test

import (
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// shippoFixture reads internal/provider/testdata/shippo/name.json.
func shippoFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../internal/provider/testdata/shippo/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// shippoProvider creates tenant acme (exists after setup) and a shippo
// provider with the given auth mode, returning the provider and its secret.
func shippoProvider(t *testing.T, e *webtest.Env, name, auth string) (domain.Provider, string) {
	t.Helper()
	secret, config, err := provider.Setup("shippo", "", map[string]string{"auth": auth})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Store.ConnectProvider(webtest.CliContext(), e.Tenant("acme").ID, name, "shippo", secret, config)
	if err != nil {
		t.Fatal(err)
	}
	return p, secret
}

func shippoSigned(secret string, t int64, body []byte) map[string]string {
	return map[string]string{"Shippo-Auth-Signature": provider.SignShippo(secret, t, body)}
}

// shippoResult posts a signed body and returns the single result.
func shippoResult(t *testing.T, e *webtest.Env, path, secret string, body []byte) map[string]any {
	t.Helper()
	status, answer := e.Post(path, body, shippoSigned(secret, time.Now().Unix(), body))
	webtest.Outcome(t, status, answer)
	return answer["results"].([]any)[0].(map[string]any)
}

func micros(s string) float64 {
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return float64(ts.UnixMicro())
}

func TestShippoTrackUpdated(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	_, secret := shippoProvider(t, e, "ship", "hmac")
	const path = "/webhooks/acme/ship"
	transit := shippoFixture(t, "track_updated_transit")
	delivered := shippoFixture(t, "track_updated_delivered")

	res := shippoResult(t, e, path, secret, transit)
	if res["outcome"] != "applied" || res["object_type"] != "shipment" || res["object_id"] != "usps:9205590000000000000001" ||
		res["event_id"] != "usps:9205590000000000000001:ts_0002" || res["revision"] != micros("2024-05-01T17:45:00Z") {
		t.Fatalf("transit: %v", res)
	}
	if got := shippoResult(t, e, path, secret, transit)["outcome"]; got != "duplicate" {
		t.Fatalf("redelivery: %v", got)
	}
	res = shippoResult(t, e, path, secret, delivered)
	if res["outcome"] != "applied" || res["revision"] != micros("2024-05-03T15:12:30.250Z") ||
		res["event_id"] != "usps:9205590000000000000001:ts_0005" {
		t.Fatalf("delivered: %v", res)
	}
	// A late scan (new status object, status_date before DELIVERED) is stale.
	late := bytes.ReplaceAll(transit, []byte(`"ts_0002"`), []byte(`"ts_0003"`))
	late = bytes.ReplaceAll(late, []byte(`"2024-05-01T17:45:00Z"`), []byte(`"2024-05-02T09:30:00.5Z"`))
	res = shippoResult(t, e, path, secret, late)
	if res["outcome"] != "stale" || res["current_revision"] != micros("2024-05-03T15:12:30.250Z") {
		t.Fatalf("older status_date: %v", res)
	}

	// The stored record is the DELIVERED track.
	_, answer := e.Get("/api/v1/tenants/acme/records/ship/shipment/usps:9205590000000000000001", e.Token("acme"))
	snap, _ := answer["snapshot"].(map[string]any)
	ts, _ := snap["tracking_status"].(map[string]any)
	if ts["status"] != "DELIVERED" {
		t.Fatalf("record %v", answer)
	}
}

func TestShippoTransactions(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	_, secret := shippoProvider(t, e, "ship", "")
	const path = "/webhooks/acme/ship"
	created := shippoFixture(t, "transaction_created")
	updated := shippoFixture(t, "transaction_updated")

	res := shippoResult(t, e, path, secret, created)
	if res["outcome"] != "applied" || res["object_type"] != "transaction" || res["object_id"] != "txn_0001" ||
		res["event_id"] != "txn_0001:2024-05-01T10:00:00.125Z" || res["revision"] != micros("2024-05-01T10:00:00.125Z") {
		t.Fatalf("created: %v", res)
	}
	res = shippoResult(t, e, path, secret, updated)
	if res["outcome"] != "applied" || res["revision"] != micros("2024-05-01T10:00:04.512345Z") {
		t.Fatalf("later object_updated: %v", res)
	}
	earlier := bytes.ReplaceAll(updated, []byte(`"2024-05-01T10:00:04.512345Z"`), []byte(`"2024-05-01T10:00:04.512344Z"`))
	if got := shippoResult(t, e, path, secret, earlier)["outcome"]; got != "stale" {
		t.Fatalf("earlier object_updated (by one microsecond): %v", got)
	}
	if got := shippoResult(t, e, path, secret, updated)["outcome"]; got != "duplicate" {
		t.Fatalf("redelivery: %v", got)
	}
}

func TestShippoEventsOfNoEffect(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	_, secret := shippoProvider(t, e, "ship", "hmac")
	const path = "/webhooks/acme/ship"

	res := shippoResult(t, e, path, secret, shippoFixture(t, "track_updated_test"))
	if res["outcome"] != "unversioned" || res["revision"] != nil {
		t.Fatalf("test webhook: %v", res)
	}
	res = shippoResult(t, e, path, secret, shippoFixture(t, "batch_created"))
	if res["outcome"] != "rejected" || !strings.Contains(res["reason"].(string), `unsupported Shippo event "batch_created"`) {
		t.Fatalf("batch_created: %v", res)
	}
	for _, tc := range []struct{ name, body, reason string }{
		{"bad status_date", `{"event":"track_updated","data":{"carrier":"usps","tracking_number":"1","tracking_status":{"object_id":"ts","status_date":"yesterday"}}}`, "RFC 3339"},
		{"no tracking_status", `{"event":"track_updated","data":{"carrier":"usps","tracking_number":"1"}}`, "tracking_status must be a JSON object"},
		{"no object_updated", `{"event":"transaction_updated","data":{"object_id":"txn_1"}}`, "data.object_updated is missing"},
		{"data not an object", `{"event":"transaction_created","data":[1]}`, "must be a JSON object"},
		{"NUL in data", `{"event":"transaction_created","data":{"object_id":"a\u0000","object_updated":"2024-05-01T10:00:00Z"}}`, "NUL"},
	} {
		res := shippoResult(t, e, path, secret, []byte(tc.body))
		if res["outcome"] != "rejected" || !strings.Contains(res["reason"].(string), tc.reason) {
			t.Errorf("%s: %v, want rejected with %q", tc.name, res, tc.reason)
		}
	}
	for _, body := range []string{`not json`, `{"data":{}}`, `{"event":"track_updated"}`, `{"event":"track_updated","data":null}`, `[1]`} {
		status, answer := e.Post(path, []byte(body), shippoSigned(secret, time.Now().Unix(), []byte(body)))
		if status != http.StatusBadRequest || answer["error"] == "" {
			t.Errorf("%s: %d %v, want 400", body, status, answer)
		}
	}
}

func TestShippoHMACStatuses(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	p, secret := shippoProvider(t, e, "ship", "hmac")
	const path = "/webhooks/acme/ship"
	body := shippoFixture(t, "transaction_created")
	now := time.Now().Unix()
	other := strings.Repeat("f", 64)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		message string
	}{
		{"missing", map[string]string{}, 401, "Shippo-Auth-Signature header is required"},
		{"wrong secret", shippoSigned(other, now, body), 401, "no Shippo-Auth-Signature v1 matches"},
		{"signed other body", shippoSigned(secret, now, append([]byte(" "), body...)), 401, "no Shippo-Auth-Signature v1 matches"},
		{"old t", shippoSigned(secret, now-6*60, body), 401, "more than 5 minutes"},
		{"future t", shippoSigned(secret, now+6*60, body), 401, "more than 5 minutes"},
		{"t replaced", map[string]string{"Shippo-Auth-Signature": "t=" + strconv.FormatInt(now-1, 10) + "," +
			strings.Split(provider.SignShippo(secret, now, body), ",")[1]}, 401, "no Shippo-Auth-Signature v1 matches"},
		{"malformed", map[string]string{"Shippo-Auth-Signature": "v1=abc"}, 401, "must be t="},
		{"t not a number", map[string]string{"Shippo-Auth-Signature": "t=soon,v1=00"}, 401, "unix timestamp"},
		{"token in hmac mode", nil, 401, "header is required"},
		{"valid", shippoSigned(secret, now, body), 200, ""},
		{"Shippo-Signature fallback", map[string]string{"Shippo-Signature": provider.SignShippo(secret, now, body)}, 200, ""},
		{"one of several v1", map[string]string{"Shippo-Auth-Signature": provider.SignShippo(other, now, body) + ",v1=" +
			strings.TrimPrefix(strings.Split(provider.SignShippo(secret, now, body), ",")[1], "v1=")}, 200, ""},
	} {
		p := path
		if tc.headers == nil {
			p += "?token=" + secret
		}
		status, answer := e.Post(p, body, tc.headers)
		if status != tc.status || (tc.message != "" && !strings.Contains(answer["error"].(string), tc.message)) {
			t.Errorf("%s: %d %v, want %d %q", tc.name, status, answer, tc.status, tc.message)
		}
	}

	// t in milliseconds (unconfirmed unit) is accepted; the MAC covers t as sent.
	ms := time.Now().UnixMilli()
	mac := strings.Split(provider.SignShippo(secret, ms, body), ",")[1]
	if status, answer := e.Post(path, body, map[string]string{"Shippo-Auth-Signature": "t=" + strconv.FormatInt(ms, 10) + "," + mac}); status != 200 {
		t.Fatalf("t in milliseconds: %d %v", status, answer)
	}
	if status, _ := e.Post(path, body, map[string]string{"Shippo-Auth-Signature": provider.SignShippo(secret, ms-10*60*1000, body)}); status != 401 {
		t.Fatalf("old t in milliseconds: %d", status)
	}

	// During a rotation both secrets are active.
	newer, _, _ := provider.Setup("shippo", "", map[string]string{"auth": "hmac"})
	if err := e.Store.RotateProviderSecret(webtest.CliContext(), p.TenantID, p.ID, newer); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, newer} {
		if status, answer := e.Post(path, body, shippoSigned(s, time.Now().Unix(), body)); status != 200 {
			t.Fatalf("rotation: %d %v", status, answer)
		}
	}
}

func TestShippoToken(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	_, token := shippoProvider(t, e, "ship", "token")
	const path = "/webhooks/acme/ship"
	body := shippoFixture(t, "transaction_created")
	for _, tc := range []struct {
		name, query string
		headers     map[string]string
		status      int
		message     string
	}{
		{"missing", "", nil, 401, "token query parameter is required"},
		{"empty", "?token=", nil, 401, "token query parameter is required"},
		{"wrong", "?token=" + strings.Repeat("x", len(token)), nil, 401, "does not match"},
		{"prefix", "?token=" + token[:len(token)-1], nil, 401, "does not match"},
		{"hmac instead of token", "", shippoSigned(token, time.Now().Unix(), body), 401, "token query parameter is required"},
		{"right", "?token=" + token, nil, 200, ""},
	} {
		status, answer := e.Post(path+tc.query, body, tc.headers)
		if status != tc.status || (tc.message != "" && !strings.Contains(answer["error"].(string), tc.message)) {
			t.Errorf("%s: %d %v, want %d %q", tc.name, status, answer, tc.status, tc.message)
		}
	}
	status, answer := e.Post(path+"?token="+token, body, nil)
	if got := webtest.Outcome(t, status, answer); got != "duplicate" {
		t.Fatalf("redelivery: %s", got)
	}
}
