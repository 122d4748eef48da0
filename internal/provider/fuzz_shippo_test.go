package provider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// FuzzShippoParse checks that parse never panics and keeps its invariants,
// and that authenticate accepts a body only when it is exactly the body that
// was signed with the provider's secret (or, in token mode, only the token).
func FuzzShippoParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/shippo/*.json")
	if len(files) == 0 {
		f.Fatal("no fixtures in testdata/shippo")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
		f.Add(b, bytes.Replace(b, []byte("2024"), []byte("2025"), 1))
		f.Add(b, append(bytes.Clone(b), ' '))
	}
	const secret = "shippo-fuzz-secret-0123456789"
	hmacP := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "shippo", Config: map[string]string{"auth": "hmac"}},
		Secrets: []string{"rotated-shippo-secret-9876543210", secret}}
	tokenP := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "shippo", Config: map[string]string{"auth": "token"}},
		Secrets: []string{secret}}
	rcv := shippo{}

	f.Fuzz(func(t *testing.T, signed, sent []byte) {
		now := time.Now()
		req := httptest.NewRequest(http.MethodPost, "/webhooks/acme/ship", bytes.NewReader(sent))

		// parse: no panic, one event carrying the raw body, usable fields.
		events, err := rcv.Parse(req, sent, hmacP)
		if err == nil {
			if len(events) != 1 || !bytes.Equal(events[0].Payload, sent) || events[0].EventID == "" {
				t.Fatalf("parse(%q) = %+v", sent, events)
			}
			if e := events[0]; e.RejectReason == "" {
				if e.ObjectID == "" || (e.Scope.ObjectType != "shipment" && e.Scope.ObjectType != "transaction") {
					t.Fatalf("accepted event without object: %+v", e)
				}
				var obj map[string]json.RawMessage
				if json.Unmarshal(e.Snapshot, &obj) != nil || obj == nil {
					t.Fatalf("snapshot %q is not a JSON object", e.Snapshot)
				}
				if e.Revision != nil && *e.Revision < 0 {
					t.Fatalf("negative revision %d", *e.Revision)
				}
			}
		}

		// HMAC: sign the original body, send the fuzzed one.
		req.Header.Set("Shippo-Auth-Signature", SignShippo(secret, now.Unix(), signed))
		verdict, err := rcv.Authenticate(req, sent, hmacP, now)
		if same := bytes.Equal(signed, sent); (err == nil) != same || (verdict == domain.SignatureValid) != same {
			t.Fatalf("hmac: signed %q, sent %q: verdict %s, err %v", signed, sent, verdict, err)
		}
		// A signature made with another secret never passes.
		req.Header.Set("Shippo-Auth-Signature", SignShippo("not-the-shippo-secret-000", now.Unix(), sent))
		if verdict, err := rcv.Authenticate(req, sent, hmacP, now); err == nil || verdict == domain.SignatureValid {
			t.Fatalf("hmac with another secret accepted: %s", verdict)
		}

		// Token: only the exact token passes.
		req.URL.RawQuery = url.Values{"token": {string(sent)}}.Encode()
		verdict, err = rcv.Authenticate(req, sent, tokenP, now)
		if same := req.URL.Query().Get("token") == secret; (err == nil) != same || (verdict == domain.SignatureValid) != same {
			t.Fatalf("token %q: verdict %s, err %v", sent, verdict, err)
		}
	})
}
