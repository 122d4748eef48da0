package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// consoleTestEvent presses the provider's test-event button and returns the
// flash shown after the redirect.
func consoleTestEvent(t *testing.T, b *webtest.Browser, provider string) string {
	t.Helper()
	status, _, loc := b.Post("/t/acme/providers/"+provider+"/test", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/"+provider {
		t.Fatalf("test event: %d to %q", status, loc)
	}
	_, doc := b.Get(loc)
	return webtest.Text(doc, ".flash")
}

func TestProviderConnectShippoHMAC(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/providers")
	if doc.Find(`a.kind-choice[href="/t/acme/providers?kind=shippo#connect"]`).Length() != 1 ||
		doc.Find(`a.kind-choice[href="/t/acme/providers?kind=salesforce#connect"]`).Length() != 1 {
		t.Fatal("shippo and salesforce should be connectable")
	}
	_, doc = b.Get("/t/acme/providers?kind=shippo")
	if legends := doc.Find("fieldset legend").Text(); legends != "For Shippo" {
		t.Fatalf("kind fieldsets %q, want Shippo's only", legends)
	}

	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {"ship"}, "kind": {"shippo"}, "shippo_auth": {"hmac"},
		"org_id": {"ignored"}})
	if status != http.StatusOK {
		t.Fatalf("connect shippo: %d %q", status, webtest.Text(doc, "main"))
	}
	secret, endpoint := webtest.Text(doc, "#provider-secret"), webtest.Text(doc, "#endpoint-url")
	if len(secret) != 64 || endpoint != e.Srv.URL+"/webhooks/acme/ship" || !strings.Contains(webtest.Text(doc, "main"), "Shippo-Auth-Signature") {
		t.Fatalf("created page: secret %q endpoint %q", secret, endpoint)
	}
	body := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"9205","tracking_status":{"object_id":"ts_1","status_date":"2026-01-01T10:00:00Z"}}}`)
	status, answer := e.Post("/webhooks/acme/ship", body, map[string]string{"Shippo-Auth-Signature": provider.SignShippo(secret, time.Now().Unix(), body)})
	if got := webtest.Outcome(t, status, answer); got != "applied" {
		t.Fatalf("delivery signed with the shown secret: %s", got)
	}

	status, doc = b.Get("/t/acme/providers/ship")
	html, _ := doc.Html()
	if status != http.StatusOK || strings.Contains(html, secret) || webtest.Text(doc, "#endpoint-url") != endpoint ||
		!strings.Contains(webtest.Text(doc, ".provider-settings dd"), "hmac") {
		t.Fatalf("provider page: %d, endpoint %q, settings %q, shows secret %v", status, webtest.Text(doc, "#endpoint-url"),
			webtest.Text(doc, ".provider-settings"), strings.Contains(html, secret))
	}
	if flash := consoleTestEvent(t, b, "ship"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event flash %q", flash)
	}

	// Rotation gives a new hmac secret; both work until the old is retired.
	status, doc, _ = b.Post("/t/acme/providers/ship/rotate", nil)
	rotated := webtest.Text(doc, "#provider-secret")
	if status != http.StatusOK || len(rotated) != 64 || rotated == secret {
		t.Fatalf("rotate: %d, secret %q", status, rotated)
	}
	body2 := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"9205","tracking_status":{"object_id":"ts_2","status_date":"2026-01-02T10:00:00Z"}}}`)
	status, answer = e.Post("/webhooks/acme/ship", body2, map[string]string{"Shippo-Auth-Signature": provider.SignShippo(rotated, time.Now().Unix(), body2)})
	if got := webtest.Outcome(t, status, answer); got != "applied" {
		t.Fatalf("delivery signed with the rotated secret: %s", got)
	}
}

func TestProviderConnectShippoToken(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {"ship-t"}, "kind": {"shippo"}, "shippo_auth": {"token"}})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %q", status, webtest.Text(doc, "main"))
	}
	token := webtest.Text(doc, "#provider-secret")
	endpoint := webtest.Text(doc, "#endpoint-url")
	if token == "" || endpoint != e.Srv.URL+"/webhooks/acme/ship-t?token="+url.QueryEscape(token) {
		t.Fatalf("token %q, endpoint %q", token, endpoint)
	}
	body := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"1","tracking_status":{"object_id":"ts_1","status_date":"2026-01-01T10:00:00Z"}}}`)
	if got := postedOutcome(t, endpoint, body); got != "applied" {
		t.Fatalf("delivery to the shown URL: %s", got)
	}

	_, doc = b.Get("/t/acme/providers/ship-t")
	html, _ := doc.Html()
	if strings.Contains(html, token) || webtest.Text(doc, "#endpoint-url") != e.Srv.URL+"/webhooks/acme/ship-t?token=…" ||
		!strings.Contains(webtest.Text(doc, ".url-note"), "shown once") {
		t.Fatalf("provider page: endpoint %q, note %q, shows token %v", webtest.Text(doc, "#endpoint-url"), webtest.Text(doc, ".url-note"), strings.Contains(html, token))
	}
	if flash := consoleTestEvent(t, b, "ship-t"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event flash %q", flash)
	}
	_, doc = b.Get("/t/acme/providers/ship-t")
	if rows := providerRows(doc); len(rows) != 2 || !strings.Contains(rows[0], "200 valid 1") {
		t.Fatalf("recent deliveries %q", rows)
	}

	// A short secret is refused with the form's wording.
	status, doc, _ = b.Post("/t/acme/providers", url.Values{"name": {"ship-x"}, "kind": {"shippo"}, "shippo_auth": {"token"}, "shippo_secret": {"short"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "[role=alert]"), "Secret must be at least 16 printable characters") {
		t.Fatalf("short secret: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	if doc.Find(`select[name=shippo_auth] option[value=token][selected]`).Length() != 1 {
		t.Error("refused form lost the auth mode")
	}
}

// postedOutcome posts body to an absolute URL and returns the outcome.
func postedOutcome(t *testing.T, u string, body []byte) string {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer map[string]any
	json.NewDecoder(resp.Body).Decode(&answer)
	return webtest.Outcome(t, resp.StatusCode, answer)
}

func TestProviderConnectSalesforce(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"org_id": {""}}, "Organization Id is required for salesforce"},
		{url.Values{"org_id": {"12345"}}, `Organization Id "12345" is not a Salesforce organization id`},
		{url.Values{"org_id": {"00D5e000000AbCdEAK"}, "allowed_networks": {"not-a-net"}}, `Allowed networks: "not-a-net" is not a CIDR network`},
	} {
		c.form.Set("name", "sf")
		c.form.Set("kind", "salesforce")
		status, doc, _ := b.Post("/t/acme/providers", c.form)
		if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "[role=alert]"), c.want) {
			t.Errorf("%v: %d %q, want 422 with %q", c.form, status, webtest.Text(doc, "[role=alert]"), c.want)
		}
		if got := doc.Find(`input[name=org_id]`).AttrOr("value", ""); got != c.form.Get("org_id") {
			t.Errorf("form shows org id %q, want %q as entered", got, c.form.Get("org_id"))
		}
	}

	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {"sf"}, "kind": {"salesforce"},
		"org_id": {"00D5e000000AbCdEAK"}, "allowed_networks": {""}, "revision_field": {""}, "shippo_secret": {"ignored-for-salesforce"}})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	token, endpoint := webtest.Text(doc, "#provider-secret"), webtest.Text(doc, "#endpoint-url")
	if len(token) != 32 || token == "ignored-for-salesforce" || endpoint != e.Srv.URL+"/webhooks/acme/sf?token="+token ||
		!strings.Contains(webtest.Text(doc, "main"), "Organization Id") || !strings.Contains(webtest.Text(doc, "#curl-example"), "?token="+token) {
		t.Fatalf("created page: token %q, endpoint %q: %q", token, endpoint, webtest.Text(doc, "main"))
	}
	p, err := e.Store.Endpoint(context.Background(), "acme", "sf")
	if err != nil || p.Config["org_id"] != "00D5e000000AbCdEAK" || p.Config["revision_field"] != "SystemModstamp" ||
		len(p.Secrets) != 1 || p.Secrets[0] != token {
		t.Fatalf("stored provider %+v: %v", p.Config, err)
	}
	sf := webtest.SfHook{E: e, Name: "sf", Token: token}
	sf.Acked(webtest.SfFixture(t, "contact.xml"))

	_, doc = b.Get("/t/acme/providers/sf")
	settings := webtest.Text(doc, ".provider-settings")
	html, _ := doc.Html()
	if !strings.Contains(settings, "00D5e000000AbCdEAK") || !strings.Contains(settings, "SystemModstamp") ||
		webtest.Text(doc, "#endpoint-url") != e.Srv.URL+"/webhooks/acme/sf?token=…" || !strings.Contains(webtest.Text(doc, ".url-note"), "shown once") ||
		strings.Contains(html, token) || doc.Find(".issued-secret").Length() != 0 {
		t.Fatalf("provider page: settings %q, endpoint %q, note %q, shows token %v", settings, webtest.Text(doc, "#endpoint-url"),
			webtest.Text(doc, ".url-note"), strings.Contains(html, token))
	}
	if doc.Find("form[action$='/rotate']").Length() != 1 || doc.Find("form[action$='/test']").Length() != 1 {
		t.Fatal("salesforce page should offer rotation and the test event")
	}
	flash := consoleTestEvent(t, b, "sf")
	if flash != "Test event sent: applied (answered Ack true)." {
		t.Fatalf("test event flash %q", flash)
	}

	// Rotation shows a new URL once; both tokens work until the old one is retired.
	status, doc, _ = b.Post("/t/acme/providers/sf/rotate", nil)
	rotated := webtest.Text(doc, "#provider-secret")
	if status != http.StatusOK || len(rotated) != 32 || rotated == token ||
		webtest.Text(doc, "#endpoint-url") != e.Srv.URL+"/webhooks/acme/sf?token="+rotated || !strings.Contains(webtest.Text(doc, "h1"), "New token") {
		t.Fatalf("rotate: %d, token %q, endpoint %q, title %q", status, rotated, webtest.Text(doc, "#endpoint-url"), webtest.Text(doc, "h1"))
	}
	sf.Acked(bytes.ReplaceAll(webtest.SfFixture(t, "contact.xml"), []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAA1")))
	renewed := webtest.SfHook{E: e, Name: "sf", Token: rotated}
	renewed.Acked(bytes.ReplaceAll(webtest.SfFixture(t, "contact.xml"), []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAA2")))
	if flash := consoleTestEvent(t, b, "sf"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event after rotation: flash %q", flash)
	}
	if status, _, _ := b.Post("/t/acme/providers/sf/retire", nil); status != http.StatusSeeOther {
		t.Fatalf("retire: %d", status)
	}
	if status, _, _ := sf.Post(webtest.SfFixture(t, "contact.xml")); status != http.StatusUnauthorized {
		t.Fatalf("retired token: %d, want 401", status)
	}
	renewed.Acked(webtest.SfFixture(t, "contact.xml"))
}

// TestProviderTestEventSalesforceNetworks: with allowed networks, the test
// event comes from inside the first one and is accepted.
func TestProviderTestEventSalesforceNetworks(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	webtest.SfProvider(e, "sfnet", map[string]string{"org_id": webtest.SfOrg, "allowed_networks": "13.108.0.0/14", "revision_field": "SystemModstamp"})
	if flash := consoleTestEvent(t, b, "sfnet"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event flash %q", flash)
	}
}

// hubspotDelivery posts a HubSpot batch to the provider, signed v3 with
// secret over the public URL (the test server's), and returns the answer.
func hubspotDelivery(e *webtest.Env, name, secret string, body []byte) (int, map[string]any) {
	e.T.Helper()
	path := "/webhooks/acme/" + name
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	return e.Post(path, body, map[string]string{
		"Content-Type":                "application/json",
		"X-HubSpot-Request-Timestamp": ts,
		"X-HubSpot-Signature-v3":      provider.SignHubSpotV3(secret, http.MethodPost, e.Srv.URL+path, body, ts),
	})
}

// hubspotOutcome delivers like hubspotDelivery and returns the single result's outcome.
func hubspotOutcome(e *webtest.Env, provider, secret string, body []byte) string {
	e.T.Helper()
	status, answer := hubspotDelivery(e, provider, secret, body)
	return webtest.Outcome(e.T, status, answer)
}

func hubspotBatch(eventID int64, value string) []byte {
	return []byte(`[{"eventId":` + strconv.FormatInt(eventID, 10) + `,"subscriptionId":2101003,"portalId":44120077,"appId":1530011,"occurredAt":` +
		strconv.FormatInt(time.Now().UnixMilli()+eventID, 10) + `,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":77001,` +
		`"propertyName":"jobtitle","propertyValue":"` + value + `","changeSource":"CRM_UI"}]`)
}

func TestProviderConnectHubSpot(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/providers?kind=hubspot")
	if !strings.Contains(doc.Find("fieldset legend").Text(), "For HubSpot") || doc.Find(`input[name=hubspot_allow_v1][type=checkbox]`).Length() != 1 ||
		!strings.Contains(webtest.Text(doc, "#hubspot-v1-hint"), "no replay protection") {
		t.Fatalf("connect form: legends %q", doc.Find("fieldset legend").Text())
	}

	// The client secret is HubSpot's: without it the form is refused.
	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {"hub"}, "kind": {"hubspot"}, "hubspot_allow_v1": {"true"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "[role=alert]"), "paste the client secret of your HubSpot app (Settings → Auth)") {
		t.Fatalf("missing secret: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	if doc.Find(`input[name=hubspot_allow_v1][checked]`).Length() != 1 || doc.Find(`input[name=name]`).AttrOr("value", "") != "hub" {
		t.Error("refused form lost what was entered")
	}
	if _, doc := b.Get("/t/acme/providers"); strings.Contains(webtest.Text(doc, "table.providers"), "hub") {
		t.Fatal("a refused hubspot provider was created")
	}

	const secret = "c0ffee00-1234-4abc-9def-0123456789ab"
	status, doc, _ = b.Post("/t/acme/providers", url.Values{"name": {"hub"}, "kind": {"hubspot"}, "hubspot_secret": {secret}})
	html, _ := doc.Html()
	endpoint := e.Srv.URL + "/webhooks/acme/hub"
	if status != http.StatusOK || strings.Contains(html, secret) || doc.Find("#provider-secret").Length() != 0 ||
		webtest.Text(doc, "#endpoint-url") != endpoint || !strings.Contains(webtest.Text(doc, ".secret-stored"), "stored") ||
		!strings.Contains(webtest.Text(doc, ".url-note"), "--public-url") {
		t.Fatalf("created page: %d, endpoint %q, stored %q, note %q, shows secret %v", status, webtest.Text(doc, "#endpoint-url"),
			webtest.Text(doc, ".secret-stored"), webtest.Text(doc, ".url-note"), strings.Contains(html, secret))
	}
	p, err := e.Store.Endpoint(context.Background(), "acme", "hub")
	if err != nil || p.Config["allow_v1"] != "false" || len(p.Secrets) != 1 || p.Secrets[0] != secret {
		t.Fatalf("stored provider %+v: %v", p.Config, err)
	}

	status, doc = b.Get("/t/acme/providers/hub")
	html, _ = doc.Html()
	if status != http.StatusOK || strings.Contains(html, secret) || webtest.Text(doc, "#endpoint-url") != endpoint ||
		!strings.Contains(webtest.Text(doc, ".provider-settings"), "allow_v1") || webtest.Text(doc, ".provider-settings dd") != "false" ||
		!strings.Contains(webtest.Text(doc, ".url-note"), "TIDEMARK_PUBLIC_URL") {
		t.Fatalf("provider page: %d, endpoint %q, settings %q, note %q, shows secret %v", status, webtest.Text(doc, "#endpoint-url"),
			webtest.Text(doc, ".provider-settings"), webtest.Text(doc, ".url-note"), strings.Contains(html, secret))
	}
	if doc.Find(`form[action$='/rotate'] input[name=new_secret][required]`).Length() != 1 ||
		!strings.HasPrefix(webtest.Text(doc, "form[action$='/rotate'] label"), "New client secret") ||
		!strings.HasPrefix(webtest.Text(doc, "#rotate-secret-hint"), "Paste the client secret of your HubSpot app (Settings → Auth).") {
		t.Fatalf("hubspot rotation should ask for the new client secret: label %q, hint %q",
			webtest.Text(doc, "form[action$='/rotate'] label"), webtest.Text(doc, "#rotate-secret-hint"))
	}

	// A delivery HubSpot signs with the client secret over the URL is applied.
	if got := hubspotOutcome(e, "hub", secret, hubspotBatch(1, "Director")); got != "applied" {
		t.Fatalf("delivery signed with the client secret: %s", got)
	}
	if status, _ := hubspotDelivery(e, "hub", "not-the-secret", hubspotBatch(2, "CTO")); status != http.StatusUnauthorized {
		t.Fatalf("delivery with a wrong secret answered %d, want 401", status)
	}

	if flash := consoleTestEvent(t, b, "hub"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event flash %q", flash)
	}

	// Rotation takes the pasted new secret; without one it is refused.
	status, _, loc := b.Post("/t/acme/providers/hub/rotate", url.Values{"new_secret": {""}})
	if status != http.StatusSeeOther || loc != "/t/acme/providers/hub" {
		t.Fatalf("rotate without secret: %d to %q", status, loc)
	}
	if _, doc = b.Get(loc); !strings.Contains(webtest.Text(doc, ".flash"), "paste the client secret") {
		t.Fatalf("rotate without secret flash %q", webtest.Text(doc, ".flash"))
	}
	const rotated = "feedface-5678-4abc-9def-ba9876543210"
	status, doc, _ = b.Post("/t/acme/providers/hub/rotate", url.Values{"new_secret": {rotated}})
	html, _ = doc.Html()
	if status != http.StatusOK || strings.Contains(html, rotated) || strings.Contains(html, secret) || !strings.Contains(webtest.Text(doc, "h1"), "New client secret") {
		t.Fatalf("rotate: %d %q, shows a secret %v", status, webtest.Text(doc, "main"), strings.Contains(html, rotated) || strings.Contains(html, secret))
	}
	if got := hubspotOutcome(e, "hub", secret, hubspotBatch(3, "VP")); got != "applied" {
		t.Fatalf("old secret during rotation: %s", got)
	}
	if got := hubspotOutcome(e, "hub", rotated, hubspotBatch(4, "CEO")); got != "applied" {
		t.Fatalf("new secret during rotation: %s", got)
	}
	if flash := consoleTestEvent(t, b, "hub"); !strings.Contains(flash, "Test event sent: applied") {
		t.Fatalf("test event after rotation: flash %q", flash)
	}
	_, doc = b.Get("/t/acme/providers/hub")
	if !strings.Contains(webtest.Text(doc, "main"), "2 active secrets") {
		t.Fatalf("provider page during rotation: %q", webtest.Text(doc, "main"))
	}
}

// TestProviderConnectHubSpotV1: allow_v1 is saved from the checkbox and a
// v1-signed delivery is then accepted.
func TestProviderConnectHubSpotV1(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	const secret = "legacy-secret-0123456789"
	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {"hub1"}, "kind": {"hubspot"}, "hubspot_secret": {secret}, "hubspot_allow_v1": {"true"}})
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".auth-intro"), "no replay protection") {
		t.Fatalf("connect: %d %q", status, webtest.Text(doc, "main"))
	}
	_, doc = b.Get("/t/acme/providers/hub1")
	if webtest.Text(doc, ".provider-settings dd") != "true" {
		t.Fatalf("settings %q", webtest.Text(doc, ".provider-settings"))
	}
	body := hubspotBatch(1, "Director")
	status, answer := e.Post("/webhooks/acme/hub1", body, map[string]string{"Content-Type": "application/json",
		"X-HubSpot-Signature": provider.SignHubSpotV1(secret, body), "X-HubSpot-Signature-Version": "v1"})
	if got := webtest.Outcome(t, status, answer); got != "applied" {
		t.Fatalf("v1 delivery: %s", got)
	}
}

// TestSalesforceIssuedTokenNotice: a salesforce provider connected before
// tokens were required gets exactly one token from the start-up step, even
// when several nodes run it at once; its page shows the new URL to the
// tenant's operators until one confirms it, and only the tenant's.
func TestSalesforceIssuedTokenNotice(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	b := e.Operator("ops@example.com", false, "acme")
	e.Tenant("other")
	outsider := e.Operator("other@example.com", false, "other")
	config := map[string]string{"org_id": webtest.SfOrg, "revision_field": "SystemModstamp"}
	if _, err := e.Store.ConnectProvider(ctx, e.Tenant("acme").ID, "legacy", "salesforce", "", config); err != nil {
		t.Fatal(err)
	}
	contact := webtest.SfFixture(t, "contact.xml")
	if status, _, _ := (webtest.SfHook{E: e, Name: "legacy"}).PostQuery("", contact); status != http.StatusUnauthorized {
		t.Fatalf("delivery to a provider without a token: %d, want 401", status)
	}

	// Several nodes start at once, then one restarts.
	kinds := provider.Names()
	var wg sync.WaitGroup
	issued := make(chan int, 4)
	for range 4 {
		wg.Go(func() {
			got, err := e.Store.IssueMissingSecrets(ctx, kinds, provider.NewSecret)
			if err != nil {
				t.Error(err)
			}
			issued <- len(got)
		})
	}
	wg.Wait()
	close(issued)
	total := 0
	for n := range issued {
		total += n
	}
	if again, err := e.Store.IssueMissingSecrets(ctx, kinds, provider.NewSecret); err != nil || len(again) != 0 {
		t.Fatalf("second start-up issued %v, %v", again, err)
	}
	p, err := e.Store.Endpoint(ctx, "acme", "legacy")
	if total != 1 || err != nil || len(p.Secrets) != 1 || len(p.Secrets[0]) != 32 {
		t.Fatalf("issued %d times, provider has %d secrets (%v), want one token", total, len(p.Secrets), err)
	}
	token := p.Secrets[0]
	issuedURL := e.Srv.URL + "/webhooks/acme/legacy?token=" + token

	for range 2 { // shown on every visit until confirmed
		_, doc := b.Get("/t/acme/providers/legacy")
		if !strings.Contains(webtest.Text(doc, ".issued-secret"), "Salesforce deliveries now need this URL") || webtest.Text(doc, "#issued-url") != issuedURL {
			t.Fatalf("notice %q, url %q, want %q", webtest.Text(doc, ".issued-secret"), webtest.Text(doc, "#issued-url"), issuedURL)
		}
	}
	resp, err := b.Client.Get(e.Srv.URL + "/t/acme/providers/legacy")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("page holding a token has Cache-Control %q", cc)
	}
	(webtest.SfHook{E: e, Name: "legacy", Token: token}).Acked(contact)

	secrets, err := e.Store.ProviderSecrets(ctx, p.TenantID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(secrets[0].ID, 10)
	if status, _, _ := outsider.Post("/t/acme/providers/legacy/secret-shown", url.Values{"secret_id": {id}}); status != http.StatusNotFound {
		t.Fatalf("another tenant's operator confirmed: %d, want 404", status)
	}
	if status, _, _ := b.Post("/t/acme/providers/legacy/secret-shown", url.Values{"secret_id": {"999999"}}); status != http.StatusNotFound {
		t.Fatalf("confirming another secret: %d, want 404", status)
	}
	status, _, loc := b.Post("/t/acme/providers/legacy/secret-shown", url.Values{"secret_id": {id}})
	if status != http.StatusSeeOther || loc != "/t/acme/providers/legacy" {
		t.Fatalf("confirm: %d to %q", status, loc)
	}
	_, doc := b.Get(loc)
	html, _ := doc.Html()
	if doc.Find(".issued-secret").Length() != 0 || strings.Contains(html, token) || !strings.Contains(webtest.Text(doc, ".flash"), "no longer shown") {
		t.Fatalf("after confirming: notice %q, flash %q, shows token %v", webtest.Text(doc, ".issued-secret"), webtest.Text(doc, ".flash"), strings.Contains(html, token))
	}
}
