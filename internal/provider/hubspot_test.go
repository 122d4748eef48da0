package provider

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
)

func TestHubSpotAuthenticateErrors(t *testing.T) {
	t.Parallel()
	const secret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"
	body := []byte(hubspotVectorBody)
	// runAuthCases sends to http://hooks.example.com/webhooks/acme/p with no
	// public base URL in the context, so that is the URL signed.
	const uri = "http://hooks.example.com/webhooks/acme/p"
	ts := strconv.FormatInt(testNow.UnixMilli(), 10)
	v3 := func(secret, ts string, body []byte) map[string]string {
		return map[string]string{"X-HubSpot-Signature-v3": SignHubSpotV3(secret, http.MethodPost, uri, body, ts), "X-HubSpot-Request-Timestamp": ts}
	}
	v1 := func(secret string, version string) map[string]string {
		return map[string]string{"X-HubSpot-Signature": SignHubSpotV1(secret, body), "X-HubSpot-Signature-Version": version}
	}
	v1On := map[string]string{"allow_v1": "true"}
	old := strconv.FormatInt(testNow.Add(-6*time.Minute).UnixMilli(), 10)
	expiredV3WithV1 := v3(secret, old, body)
	for k, v := range v1(secret, "v1") {
		expiredV3WithV1[k] = v
	}
	runAuthCases(t, hubspot{}, []authCase{
		{name: "valid v3", secrets: []string{secret}, headers: v3(secret, ts, body), body: body, wantVerdict: domain.SignatureValid},
		{name: "valid v1 when allowed", config: v1On, secrets: []string{secret}, headers: v1(secret, "v1"), body: body, wantVerdict: domain.SignatureValid},
		{name: "no headers", secrets: []string{secret}, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "the X-HubSpot-Signature-v3 and X-HubSpot-Request-Timestamp headers are required"},
		{name: "v1 while v1 is off", secrets: []string{secret}, headers: v1(secret, "v1"), body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "v1/v2 signatures are not accepted by this provider (allow_v1 is off)"},
		{name: "v3 without timestamp", secrets: []string{secret}, headers: map[string]string{"X-HubSpot-Signature-v3": "c2ln"}, body: body,
			wantVerdict: domain.SignatureMissing, wantErr: "the X-HubSpot-Request-Timestamp header is required with X-HubSpot-Signature-v3"},
		{name: "timestamp not a number", secrets: []string{secret}, headers: v3(secret, "later", body), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "X-HubSpot-Request-Timestamp must be epoch milliseconds"},
		{name: "negative timestamp", secrets: []string{secret}, headers: v3(secret, "-1", body), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "epoch milliseconds"},
		{name: "too old", secrets: []string{secret}, headers: v3(secret, old, body), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "X-HubSpot-Request-Timestamp is 6m0s from the server clock"},
		{name: "absurd timestamp", secrets: []string{secret}, headers: v3(secret, "9999999999999999", body), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "is years from the server clock"},
		{name: "expired v3 does not fall back to v1", config: v1On, secrets: []string{secret}, headers: expiredV3WithV1, body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "more than 5 minutes is refused"},
		{name: "v3 not base64", secrets: []string{secret}, headers: map[string]string{"X-HubSpot-Signature-v3": "@@", "X-HubSpot-Request-Timestamp": ts},
			body: body, wantVerdict: domain.SignatureInvalid, wantErr: "X-HubSpot-Signature-v3 must be base64"},
		{name: "v3 other secret", secrets: []string{"rotated-out-secret"}, headers: v3(secret, ts, body), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "X-HubSpot-Signature-v3 matches no active client secret of this provider (signed URI"},
		{name: "v3 tampered body", secrets: []string{secret}, headers: v3(secret, ts, body), body: append(bytes.Clone(body), ' '),
			wantVerdict: domain.SignatureInvalid, wantErr: "matches no active client secret"},
		{name: "v3 other URL", target: "/webhooks/acme/other", secrets: []string{secret}, headers: v3(secret, ts, body), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "check --public-url"},
		{name: "v1 allowed but missing", config: v1On, secrets: []string{secret}, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "(or a v1 X-HubSpot-Signature) are required"},
		{name: "v1 allowed, version v2", config: v1On, secrets: []string{secret}, headers: v1(secret, "v2"), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: `X-HubSpot-Signature-Version "v2" is not accepted`},
		{name: "v1 not hex", config: v1On, secrets: []string{secret}, headers: map[string]string{"X-HubSpot-Signature": "zz", "X-HubSpot-Signature-Version": "v1"},
			body: body, wantVerdict: domain.SignatureInvalid, wantErr: "X-HubSpot-Signature must be hex"},
		{name: "v1 other secret", config: v1On, secrets: []string{"rotated-out-secret"}, headers: v1(secret, "v1"), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "X-HubSpot-Signature (v1) matches no active client secret"},
	})
}

func TestHubSpotParseErrors(t *testing.T) {
	t.Parallel()
	events := make([]string, hubspotMaxEvents+1)
	for i := range events {
		events[i] = `{"eventId":1}`
	}
	runParseCases(t, hubspot{}, []parseCase{
		{name: "not UTF-8", body: []byte("[\"\xff\"]"), wantErr: "body is not valid UTF-8"},
		{name: "empty", body: nil, wantErr: "body is not a JSON array of HubSpot events"},
		{name: "object", body: []byte(`{"eventId":1}`), wantErr: "body is not a JSON array of HubSpot events"},
		{name: "broken array", body: []byte(`[{"eventId":1},`), wantErr: "body is not a JSON array of HubSpot events: "},
		{name: "too many events", body: []byte("[" + strings.Join(events, ",") + "]"), wantErr: "batch has 101 events; HubSpot sends at most 100"},
	})
}

// TestHubSpotSignatureFromOfficialClient signs a delivery with HubSpot's
// official Node client (testdata/hubspot/sign.mjs) and expects the same
// signature, accepted by Authenticate. CI installs the client; the test
// installs nothing.
func TestHubSpotSignatureFromOfficialClient(t *testing.T) {
	t.Parallel()
	e2e.Require(t, "node and @hubspot/api-client")
	const secret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"
	body := readHubSpotFixture(t, "batch_contact.json")
	now := time.Now()
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	const base = "https://hooks.example.com"
	uri := base + "/webhooks/acme/hs"
	sig := signWithNode(t, "hubspot", filepath.Join("@hubspot", "api-client"),
		map[string]string{"secret": secret, "method": "POST", "uri": uri, "body": string(body), "timestamp": ts})
	if sig != SignHubSpotV3(secret, "POST", uri, body, ts) {
		t.Errorf("official signature %s differs from SignHubSpotV3", sig)
	}
	r := httptest.NewRequest(http.MethodPost, "http://10.0.0.7:8080/webhooks/acme/hs", bytes.NewReader(body))
	r = r.WithContext(WithPublicBase(r.Context(), base))
	r.Header.Set("X-HubSpot-Signature-v3", sig)
	r.Header.Set("X-HubSpot-Request-Timestamp", ts)
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "hubspot"}, Secrets: []string{secret}}
	if v, err := (hubspot{}).Authenticate(r, body, p, now); v != domain.SignatureValid {
		t.Errorf("Authenticate = %s, %v; want valid", v, err)
	}
}

// TestHubSpotReasonHidesQuery (review 3, F17): the 401 reason names the
// signed URL with its query elided: the reason is answered and kept in the
// delivery log, and a query may carry a credential of the sender's.
func TestHubSpotReasonHidesQuery(t *testing.T) {
	t.Parallel()
	const secret = "3f7c2a10-6d4e-4b8a-9c21-5e0f8d7a6b43"
	body := []byte(hubspotVectorBody)
	ts := strconv.FormatInt(testNow.UnixMilli(), 10)
	r := httptest.NewRequest(http.MethodPost, "http://hooks.example.com/webhooks/acme/p?key=query-credential-0123456789", bytes.NewReader(body))
	r.Header.Set("X-HubSpot-Signature-v3", SignHubSpotV3("other-secret", http.MethodPost, "http://hooks.example.com/webhooks/acme/p", body, ts))
	r.Header.Set("X-HubSpot-Request-Timestamp", ts)
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "hubspot"}, Secrets: []string{secret}}
	v, err := hubspot{}.Authenticate(r, body, p, testNow)
	if v != domain.SignatureInvalid || err == nil {
		t.Fatalf("Authenticate = %s, %v; want invalid", v, err)
	}
	if msg := err.Error(); strings.Contains(msg, "query-credential") || !strings.Contains(msg, `"http://hooks.example.com/webhooks/acme/p?…"`) ||
		!strings.Contains(msg, "check --public-url") {
		t.Fatalf("reason %q, want the signed URL without its query", msg)
	}
}
