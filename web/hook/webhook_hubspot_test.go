package hook_test

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
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func hubspotFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "provider", "testdata", "hubspot", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHubSpotSignatures(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)
	body := hubspotFixture(t, "deletion.json")

	if status, answer := webtest.HubspotPost(e, body, nil, time.Now()); status != http.StatusOK {
		t.Fatalf("good v3: %d %v", status, answer)
	}
	tampered := bytes.Replace(body, []byte("77002"), []byte("77003"), 1)
	if status, _ := webtest.HubspotPost(e, tampered, body, time.Now()); status != http.StatusUnauthorized {
		t.Errorf("changed body: %d, want 401", status)
	}
	if status, _ := webtest.HubspotPost(e, body, nil, time.Now().Add(-6*time.Minute)); status != http.StatusUnauthorized {
		t.Errorf("6 minutes old: %d, want 401", status)
	}
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	bad := map[string]string{"X-HubSpot-Signature-v3": provider.SignHubSpotV3("wrong-secret-0000", "POST", e.Srv.URL+"/webhooks/acme/hs", body, ts), "X-HubSpot-Request-Timestamp": ts}
	if status, _ := e.Post("/webhooks/acme/hs", body, bad); status != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", status)
	}
	if status, _ := e.Post("/webhooks/acme/hs", body, nil); status != http.StatusUnauthorized {
		t.Errorf("no headers: %d, want 401", status)
	}
	v1 := map[string]string{"X-HubSpot-Signature": provider.SignHubSpotV1(webtest.HubspotSecret, body), "X-HubSpot-Signature-Version": "v1"}
	if status, _ := e.Post("/webhooks/acme/hs", body, v1); status != http.StatusUnauthorized {
		t.Errorf("v1 without allow_v1: %d, want 401", status)
	}

	if _, err := e.Store.ConnectProvider(webtest.CliContext(), e.Tenant("acme").ID, "hs1", "hubspot", webtest.HubspotSecret, map[string]string{"allow_v1": "true"}); err != nil {
		t.Fatal(err)
	}
	if status, answer := e.Post("/webhooks/acme/hs1", body, v1); status != http.StatusOK {
		t.Errorf("v1 with allow_v1: %d %v, want 200", status, answer)
	}
	v1["X-HubSpot-Signature"] = provider.SignHubSpotV1(webtest.HubspotSecret, tampered)
	if status, _ := e.Post("/webhooks/acme/hs1", body, v1); status != http.StatusUnauthorized {
		t.Errorf("v1 over another body: %d, want 401", status)
	}
}

func TestHubSpotDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)

	body := hubspotFixture(t, "batch_contact.json")
	first := e.HubspotResults(webtest.HubspotPost(e, body, nil, time.Now()))
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
	for i, r := range e.HubspotResults(webtest.HubspotPost(e, retry, nil, time.Now())) {
		if r["outcome"] != "duplicate" {
			t.Errorf("redelivered result %d: %v, want duplicate", i, r)
		}
	}

	results := e.HubspotResults(webtest.HubspotPost(e, hubspotFixture(t, "batch_malformed.json"), nil, time.Now()))
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
		if status, answer := webtest.HubspotPost(e, []byte(b), nil, time.Now()); status != http.StatusBadRequest {
			t.Errorf("%.30s: %d %v, want 400", b, status, answer)
		}
	}
}
