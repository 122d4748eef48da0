package webtest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

const HubspotSecret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"

// hubspotProvider creates acme/hs of kind hubspot with config.
func (e *Env) HubspotProvider(config map[string]string) {
	e.T.Helper()
	if _, err := e.Store.ConnectProvider(CliContext(), e.Tenant("acme").ID, "hs", "hubspot", HubspotSecret, config); err != nil {
		e.T.Fatal(err)
	}
}

// hubspotPost posts body to acme/hs with a v3 signature made at sent over
// signedBody (nil: body).
func (e *Env) HubspotPost(body, signedBody []byte, sent time.Time) (int, map[string]any) {
	e.T.Helper()
	if signedBody == nil {
		signedBody = body
	}
	ts := strconv.FormatInt(sent.UnixMilli(), 10)
	const path = "/webhooks/acme/hs"
	return e.Post(path, body, map[string]string{
		"Content-Type":                "application/json",
		"X-HubSpot-Signature-v3":      provider.SignHubSpotV3(HubspotSecret, http.MethodPost, e.Srv.URL+path, signedBody, ts),
		"X-HubSpot-Request-Timestamp": ts,
		"X-HubSpot-Signature":         provider.SignHubSpotV1(HubspotSecret, signedBody),
		"X-HubSpot-Signature-Version": "v1",
	})
}

func (e *Env) HubspotResults(status int, body map[string]any) []map[string]any {
	t := e.T
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
