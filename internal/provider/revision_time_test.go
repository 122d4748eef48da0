package provider

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// TestRevisionTimes checks that the kinds whose revision is a timestamp say
// which instant it names, so the receiver can refuse one from the future,
// and that the others, and events without a usable revision, leave it zero.
func TestRevisionTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, fixture string
		config        map[string]string
		headers       map[string]string
		unit          time.Duration // of the revision; 0: not a timestamp
	}{
		{kind: "salesforce", fixture: "contact.xml", config: map[string]string{"org_id": sfOrg}, unit: time.Microsecond},
		{kind: "salesforce", fixture: "no_modstamp.xml", config: map[string]string{"org_id": sfOrg}, unit: time.Microsecond},
		{kind: "hubspot", fixture: "batch_contact.json", unit: time.Millisecond},
		{kind: "hubspot", fixture: "batch_malformed.json", unit: time.Millisecond},
		{kind: "shippo", fixture: "track_updated_transit.json", unit: time.Microsecond},
		{kind: "shippo", fixture: "transaction_updated.json", unit: time.Microsecond},
		{kind: "shippo", fixture: "track_updated_test.json", unit: time.Microsecond},
		{kind: "standard", fixture: "contact-snapshot.json", headers: map[string]string{"webhook-id": "msg_1"}},
	} {
		t.Run(tc.kind+"/"+tc.fixture, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join("testdata", tc.kind, tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/webhooks/acme/p", bytes.NewReader(body))
			for h, v := range tc.headers {
				r.Header.Set(h, v)
			}
			k, _ := Lookup(tc.kind)
			events, err := k.Parse(r, body, domain.ProviderEndpoint{Provider: domain.Provider{Kind: tc.kind, Config: tc.config}})
			if err != nil {
				t.Fatal(err)
			}
			timed := 0
			for _, e := range events {
				switch {
				case e.Revision == nil || tc.unit == 0:
					if !e.RevisionTime.IsZero() {
						t.Errorf("event %s: revision %v, yet a revision time %s", e.EventID, e.Revision, e.RevisionTime)
					}
				case e.RevisionTime.Sub(time.Unix(0, 0)) != time.Duration(*e.Revision)*tc.unit:
					t.Errorf("event %s: revision %d names %s, not %s", e.EventID, *e.Revision, e.RevisionTime, time.Unix(0, 0).Add(time.Duration(*e.Revision)*tc.unit))
				default:
					timed++
				}
			}
			if tc.unit != 0 && timed == 0 && tc.fixture != "no_modstamp.xml" && tc.fixture != "track_updated_test.json" {
				t.Errorf("no event of %s has a revision time", tc.fixture)
			}
		})
	}
}
