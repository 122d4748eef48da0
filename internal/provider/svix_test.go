package provider

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
)

// TestStandardSignatureFromSvix signs a delivery with Svix's own Node
// library (testdata/svix/sign.mjs) and sends it as Svix does, under the
// svix-* header names: the standard kind accepts it, and the signature is
// the one SignStandard computes. CI installs the library; the test
// installs nothing.
func TestStandardSignatureFromSvix(t *testing.T) {
	t.Parallel()
	e2e.Require(t, "node and svix")
	secret := NewStandardSecret()
	body := []byte(`{"type":"contact.snapshot","data":{"contact_id":"c-1","revision":7,"snapshot":{"job_title":"Directrice générale"}}}`)
	now := time.Now()
	const id = "msg_2QwErTy"
	sig := signWithNode(t, "svix", "svix", map[string]any{"secret": secret, "id": id, "timestamp": now.Unix(), "body": string(body)})
	if want, _ := SignStandard(secret, id, now.Unix(), body); sig != want {
		t.Errorf("svix signature %s differs from SignStandard's %s", sig, want)
	}
	r := httptest.NewRequest(http.MethodPost, "http://hooks.example.com/webhooks/acme/p", bytes.NewReader(body))
	r.Header.Set("svix-id", id)
	r.Header.Set("svix-timestamp", strconv.FormatInt(now.Unix(), 10))
	r.Header.Set("svix-signature", sig)
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "standard"}, Secrets: []string{secret}}
	if v, err := (standard{}).Authenticate(r, body, p, now); v != domain.SignatureValid {
		t.Fatalf("Authenticate = %s, %v; want valid", v, err)
	}
	events, err := standard{}.Parse(r, body, p)
	if err != nil || len(events) != 1 || events[0].EventID != id {
		t.Fatalf("Parse = %+v, %v; want one event %s", events, err, id)
	}
	// Tampered, the same signature is refused.
	if v, _ := (standard{}).Authenticate(r, append(bytes.Clone(body), ' '), p, now); v != domain.SignatureInvalid {
		t.Fatalf("tampered body: %s, want invalid", v)
	}
}
