package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// The bench's HubSpot batches pass the kind's own signature check and parse
// into the events asked for, none rejected, none from the future.
func TestHubSpotLoadRequest(t *testing.T) {
	t.Parallel()
	secret := provider.NewHubSpotSecret()
	load := &hubspotLoad{target: "http://127.0.0.1:8123/webhooks/bench/batch", secret: secret, contacts: 50, batch: 100}
	endpoint := domain.ProviderEndpoint{Provider: domain.Provider{Kind: provider.HubSpot.Name(), Config: map[string]string{"allow_v1": "false"}},
		Secrets: []string{secret}}
	ids := map[string]bool{}
	for range 2 {
		req, err := load.request(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if verdict, err := provider.HubSpot.Authenticate(req, body, endpoint, now); err != nil || verdict != domain.SignatureValid {
			t.Fatalf("Authenticate = %q, %v", verdict, err)
		}
		endpoint.Secrets = []string{"another-client-secret"}
		if verdict, _ := provider.HubSpot.Authenticate(req, body, endpoint, now); verdict == domain.SignatureValid {
			t.Fatal("the batch authenticates under another secret")
		}
		endpoint.Secrets = []string{secret}
		events, err := provider.HubSpot.Parse(req, body, endpoint)
		if err != nil || len(events) != 100 {
			t.Fatalf("Parse = %d events, %v", len(events), err)
		}
		for _, e := range events {
			if e.RejectReason != "" || e.Scope != (domain.ScopeName{ObjectType: "contact", Action: "propertyChange"}) || e.Property == "" {
				t.Fatalf("event %+v", e)
			}
			if e.RevisionTime.After(now) || now.Sub(e.RevisionTime) > 2*time.Second {
				t.Errorf("event %s occurred at %s, at %s", e.EventID, e.RevisionTime, now)
			}
			if ids[e.EventID] {
				t.Errorf("event id %s sent twice", e.EventID)
			}
			ids[e.EventID] = true
		}
	}
}
