package replay

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// TestStoredRequestParsesAlike: for every kind, the request rebuilt from
// what the delivery log keeps (credentials redacted) parses into exactly
// the events the request as sent did, so a replay reads a body as its
// arrival did.
func TestStoredRequestParsesAlike(t *testing.T) {
	t.Parallel()
	configs := map[string]map[string]string{"salesforce": {"org_id": "00D5e000000AbCdEAK"}, "shippo": {"auth": "token"}}
	for _, name := range provider.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kind, _ := provider.Lookup(name)
			config := configs[name]
			secret, config, err := provider.Setup(name, "", config)
			if err != nil {
				if secret, err = kind.NewSecret(config); err == nil {
					secret, config, err = provider.Setup(name, secret, config)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			const endpoint = "http://hooks.example.com/webhooks/acme/p"
			sample, err := kind.TestDelivery(endpoint, secret, config, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			target := endpoint
			if sample.Query != "" {
				target += "?" + sample.Query
			}
			sent, _ := http.NewRequest(http.MethodPost, target, bytes.NewReader(sample.Body))
			sent.RemoteAddr = "192.0.2.7:4000"
			sent.Header.Set("Content-Type", "application/json")
			for k, v := range sample.Headers {
				sent.Header.Set(k, v)
			}
			p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: name, Config: config}, Secrets: []string{secret}}
			want, err := provider.Parse(kind, sent, sample.Body, p)
			if err != nil {
				t.Fatal(err)
			}
			kept := domain.DeliveryDetail{Request: captured(sent, name), Body: sample.Body}
			if reflect.DeepEqual(kept.Request.Headers, map[string][]string(sent.Header)) && sample.Query == kept.Request.Query {
				t.Fatal("nothing was redacted: the test proves nothing")
			}
			stored, err := storedRequest(context.Background(), kept)
			if err != nil {
				t.Fatal(err)
			}
			got, err := provider.Parse(kind, stored, sample.Body, p)
			if err != nil {
				t.Fatalf("the stored request does not parse: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("events from the stored request\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// captured is what the webhook's delivery log keeps of r (web/hook's
// captureRequest): credentials of kind redacted.
func captured(r *http.Request, kind string) domain.Request {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	return domain.CaptureRequest(r.Method, r.URL.Path, r.URL.RawQuery, r.Header, host,
		func(name string) bool { return provider.CredentialHeader(kind, name) },
		func(name string) bool { return provider.CredentialQuery(kind, name) })
}
