package web_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

const hubspotSecret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"

// hubspotProvider creates acme/hs of kind hubspot with config.
func (e *env) hubspotProvider(config map[string]string) {
	e.t.Helper()
	if _, err := e.store.ConnectProvider(cliContext(), e.tenant("acme").ID, "hs", "hubspot", hubspotSecret, config); err != nil {
		e.t.Fatal(err)
	}
}

func hubspotFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "provider", "testdata", "hubspot", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hubspotPost posts body to acme/hs with a v3 signature made at sent over
// signedBody (nil: body).
func (e *env) hubspotPost(body, signedBody []byte, sent time.Time) (int, map[string]any) {
	e.t.Helper()
	if signedBody == nil {
		signedBody = body
	}
	ts := strconv.FormatInt(sent.UnixMilli(), 10)
	const path = "/webhooks/acme/hs"
	return e.post(path, body, map[string]string{
		"Content-Type":                "application/json",
		"X-HubSpot-Signature-v3":      provider.SignHubSpotV3(hubspotSecret, http.MethodPost, e.srv.URL+path, signedBody, ts),
		"X-HubSpot-Request-Timestamp": ts,
		"X-HubSpot-Signature":         provider.SignHubSpotV1(hubspotSecret, signedBody),
		"X-HubSpot-Signature-Version": "v1",
	})
}

func (e *env) hubspotResults(status int, body map[string]any) []map[string]any {
	t := e.t
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d (%v), want 200", status, body)
	}
	raw, _ := body["results"].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	return out
}

func TestHubSpotSignatures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.hubspotProvider(nil)
	body := hubspotFixture(t, "deletion.json")

	if status, answer := e.hubspotPost(body, nil, time.Now()); status != http.StatusOK {
		t.Fatalf("good v3: %d %v", status, answer)
	}
	tampered := bytes.Replace(body, []byte("77002"), []byte("77003"), 1)
	if status, _ := e.hubspotPost(tampered, body, time.Now()); status != http.StatusUnauthorized {
		t.Errorf("changed body: %d, want 401", status)
	}
	if status, _ := e.hubspotPost(body, nil, time.Now().Add(-6*time.Minute)); status != http.StatusUnauthorized {
		t.Errorf("6 minutes old: %d, want 401", status)
	}
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	bad := map[string]string{"X-HubSpot-Signature-v3": provider.SignHubSpotV3("wrong-secret-0000", "POST", e.srv.URL+"/webhooks/acme/hs", body, ts), "X-HubSpot-Request-Timestamp": ts}
	if status, _ := e.post("/webhooks/acme/hs", body, bad); status != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", status)
	}
	if status, _ := e.post("/webhooks/acme/hs", body, nil); status != http.StatusUnauthorized {
		t.Errorf("no headers: %d, want 401", status)
	}
	v1 := map[string]string{"X-HubSpot-Signature": provider.SignHubSpotV1(hubspotSecret, body), "X-HubSpot-Signature-Version": "v1"}
	if status, _ := e.post("/webhooks/acme/hs", body, v1); status != http.StatusUnauthorized {
		t.Errorf("v1 without allow_v1: %d, want 401", status)
	}

	if _, err := e.store.ConnectProvider(cliContext(), e.tenant("acme").ID, "hs1", "hubspot", hubspotSecret, map[string]string{"allow_v1": "true"}); err != nil {
		t.Fatal(err)
	}
	if status, answer := e.post("/webhooks/acme/hs1", body, v1); status != http.StatusOK {
		t.Errorf("v1 with allow_v1: %d %v, want 200", status, answer)
	}
	v1["X-HubSpot-Signature"] = provider.SignHubSpotV1(hubspotSecret, tampered)
	if status, _ := e.post("/webhooks/acme/hs1", body, v1); status != http.StatusUnauthorized {
		t.Errorf("v1 over another body: %d, want 401", status)
	}
}

func TestHubSpotDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.hubspotProvider(nil)

	body := hubspotFixture(t, "batch_contact.json")
	first := e.hubspotResults(e.hubspotPost(body, nil, time.Now()))
	if len(first) != 5 {
		t.Fatalf("results %v, want 5", first)
	}
	for i, r := range first {
		if r["outcome"] == "rejected" || r["outcome"] == "duplicate" {
			t.Errorf("result %d: %v", i, r)
		}
	}
	if first[0]["event_id"] != "44120077:2101001:3817001:77001:1764410400000" || first[0]["contact_id"] != "77001" {
		t.Errorf("first result %v", first[0])
	}
	if first[4]["object_type"] != "company" || first[4]["object_id"] != "9120044" {
		t.Errorf("company result %v", first[4])
	}
	// A redelivery (HubSpot retries with another attemptNumber) is all duplicates.
	retry := bytes.ReplaceAll(body, []byte(`"attemptNumber":0`), []byte(`"attemptNumber":1`))
	for i, r := range e.hubspotResults(e.hubspotPost(retry, nil, time.Now())) {
		if r["outcome"] != "duplicate" {
			t.Errorf("redelivered result %d: %v, want duplicate", i, r)
		}
	}

	results := e.hubspotResults(e.hubspotPost(hubspotFixture(t, "batch_malformed.json"), nil, time.Now()))
	if len(results) != 3 {
		t.Fatalf("results %v, want 3", results)
	}
	if results[1]["outcome"] != "rejected" || !strings.Contains(results[1]["reason"].(string), "objectId") {
		t.Errorf("malformed event: %v, want rejected with a reason", results[1])
	}
	for _, i := range []int{0, 2} {
		if results[i]["outcome"] == "rejected" {
			t.Errorf("result %d rejected: %v", i, results[i])
		}
	}

	for _, b := range []string{`{"eventId":1}`, `[` + strings.TrimSuffix(strings.Repeat(`{},`, 101), ",") + `]`} {
		if status, answer := e.hubspotPost([]byte(b), nil, time.Now()); status != http.StatusBadRequest {
			t.Errorf("%.30s: %d %v, want 400", b, status, answer)
		}
	}
}
