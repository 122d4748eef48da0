package hook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestHubSpotPerPropertyOutcomes: a batch applies per event and per
// property; a late older change of one property is stale while a newer
// change of another still applies; deletion makes older changes stale.
func TestHubSpotPerPropertyOutcomes(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)
	now := time.Now()
	want := func(body string, outcomes ...string) {
		t.Helper()
		results := e.HubspotResults(webtest.HubspotPost(e, []byte(body), nil, now))
		if len(results) != len(outcomes) {
			t.Fatalf("%d results, want %d: %v", len(results), len(outcomes), results)
		}
		for i, r := range results {
			if r["outcome"] != outcomes[i] {
				t.Errorf("event %d: %v (%v), want %s", i, r["outcome"], r["reason"], outcomes[i])
			}
		}
	}
	want(string(hubspotFixture(t, "batch_contact.json")), "applied", "applied", "applied", "applied", "applied")

	ev := func(id, typ, prop, value string, occurredAt int64) string {
		s := `{"eventId":` + id + `,"subscriptionId":2101003,"portalId":44120077,"appId":1530011,"occurredAt":` +
			strconv.FormatInt(occurredAt, 10) + `,"subscriptionType":"` + typ + `","attemptNumber":0,"objectId":77001`
		if prop != "" {
			s += `,"propertyName":"` + prop + `","propertyValue":"` + value + `"`
		}
		return s + "}"
	}
	// jobtitle was set at ...523900: an older jobtitle is stale, an older
	// change of another property (phone) still applies.
	want("["+ev("1", "contact.propertyChange", "jobtitle", "Intern", 1764410500000)+","+
		ev("2", "contact.propertyChange", "phone", "555-0100", 1764410500000)+"]", "stale", "applied")
	// Same occurredAt, other value: a revision conflict of that property.
	want("["+ev("3", "contact.propertyChange", "jobtitle", "CTO", 1764410523900)+"]", "revision_conflict")
	want("["+ev("4", "contact.deletion", "", "", 1764410600000)+","+
		ev("5", "contact.propertyChange", "lifecyclestage", "customer", 1764410590000)+"]", "applied", "stale")

	tok := e.Token("acme")
	status, rec := e.Get("/api/v1/tenants/acme/contacts/hs/77001", tok)
	snap, _ := rec["snapshot"].(map[string]any)
	if status != 200 || snap["jobtitle"] != "VP Data & Analytics" || snap["phone"] != "555-0100" || snap["lifecyclestage"] != "lead" {
		t.Fatalf("contact %d %v", status, rec)
	}
}

// TestHubSpotSignsThePublicURL: behind a proxy HubSpot signs the public URL,
// not the address the server sees.
func TestHubSpotSignsThePublicURL(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)
	const public = "https://hooks.example.com"
	srv := httptest.NewServer(web.New(web.Config{Store: e.Store,
		Sessions: e.Store.SessionStore(), Ping: e.Store.Pool().Ping, PublicURL: public,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	defer srv.Close()
	body := hubspotFixture(t, "deletion.json")
	post := func(signedURL string) int {
		ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/webhooks/acme/hs", strings.NewReader(string(body)))
		req.Header.Set("X-HubSpot-Signature-v3", provider.SignHubSpotV3(webtest.HubspotSecret, http.MethodPost, signedURL, body, ts))
		req.Header.Set("X-HubSpot-Request-Timestamp", ts)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post(public + "/webhooks/acme/hs"); status != 200 {
		t.Fatalf("signature over the public URL answered %d, want 200", status)
	}
	if status := post(srv.URL + "/webhooks/acme/hs"); status != 401 {
		t.Fatalf("signature over the internal URL answered %d, want 401", status)
	}
}
