package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/provider"
)

// connectProvider submits the connect form and returns the page showing
// the new provider's secret and endpoint.
func connectProvider(t *testing.T, b *browser, name string) *goquery.Document {
	t.Helper()
	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {name}, "kind": {"standard"}})
	if status != http.StatusOK {
		t.Fatalf("connect %s answered %d: %s", name, status, text(doc, "main"))
	}
	return doc
}

// providerRows is the text of each row of a provider's recent deliveries.
func providerRows(doc *goquery.Document) []string {
	return providerTableRows(doc, "table.deliveries")
}

// providerTableRows is the text of each body row of a table, its cells separated
// by spaces.
func providerTableRows(doc *goquery.Document, table string) []string {
	var rows []string
	doc.Find(table + " tbody tr").Each(func(_ int, tr *goquery.Selection) {
		var cells []string
		tr.Find("td").Each(func(_ int, td *goquery.Selection) {
			cells = append(cells, strings.Fields(td.Text())...)
		})
		rows = append(rows, strings.Join(cells, " "))
	})
	return rows
}

func TestProviderConnectShowsSecretOnce(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")

	status, doc := b.get("/t/acme/providers")
	if status != http.StatusOK || !strings.Contains(text(doc, "table.providers"), "crm") {
		t.Fatalf("providers page: %d, table %q", status, text(doc, "table.providers"))
	}
	if opt := doc.Find(`select[name=kind] option[value=hubspot]`); opt.Length() != 1 || opt.AttrOr("disabled", "no") != "no" || strings.Contains(opt.Text(), "coming soon") {
		t.Fatalf("hubspot option %q should be connectable", opt.Text())
	}

	doc = connectProvider(t, b, "billing")
	secret := text(doc, "#provider-secret")
	endpoint := text(doc, "#endpoint-url")
	if !strings.HasPrefix(secret, "whsec_") || endpoint != e.srv.URL+"/webhooks/acme/billing" {
		t.Fatalf("created page shows secret %q and endpoint %q", secret, endpoint)
	}
	for _, id := range []string{"provider-secret", "endpoint-url", "curl-example", "send-example"} {
		if doc.Find(`button[data-copy="`+id+`"]`).Length() != 1 {
			t.Errorf("no copy button for #%s", id)
		}
	}
	if send := text(doc, "#send-example"); send != "tidemark send --url "+endpoint+" --secret "+secret {
		t.Errorf("send example %q", send)
	}
	if got := e.outcome("acme", "billing", secret, "b-1", snapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("delivery signed with the shown secret: %s", got)
	}

	for _, path := range []string{"/t/acme/providers/billing", "/t/acme/providers"} {
		status, doc = b.get(path)
		html, _ := doc.Html()
		if status != http.StatusOK || strings.Contains(html, secret) || strings.Contains(html, strings.TrimPrefix(secret, "whsec_")) {
			t.Fatalf("%s: %d, shows the secret again: %v", path, status, strings.Contains(html, secret))
		}
	}
	status, doc = b.get("/t/acme/providers/billing")
	if text(doc, "#endpoint-url") != endpoint || !strings.Contains(text(doc, "main"), "1 active secret") {
		t.Fatalf("provider page: endpoint %q, main %q", text(doc, "#endpoint-url"), text(doc, "main"))
	}
	if rows := providerRows(doc); len(rows) != 1 || !strings.Contains(rows[0], "200") || !strings.Contains(rows[0], "valid") {
		t.Fatalf("recent deliveries %q, want the one accepted delivery", rows)
	}
}

func TestProviderConnectValidation(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	for _, c := range []struct{ name, kind, want string }{
		{"Bad Name", "standard", "must be 1-63 characters of a-z, 0-9 and '-'"},
		{"-crm", "standard", "starting with a letter or digit"},
		{"crm", "standard", `a provider named "crm" already exists`},
		{"hub", "hubspot", "paste the client secret of your HubSpot app (Settings → Auth)"},
		{"odd", "telepathy", `provider kind "telepathy" is not one of`},
	} {
		status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {c.name}, "kind": {c.kind}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[role=alert]"), c.want) {
			t.Errorf("%s/%s: %d %q, want 422 with %q", c.kind, c.name, status, text(doc, "[role=alert]"), c.want)
		}
		if got := doc.Find(`input[name=name]`).AttrOr("value", ""); got != c.name {
			t.Errorf("form shows name %q, want %q as entered", got, c.name)
		}
	}
	if _, doc := b.get("/t/acme/providers"); doc.Find("table.providers tbody tr").Length() != 1 {
		t.Fatal("a refused provider was created")
	}
}

// TestProviderCurlExample runs the shown shell snippet against the server.
func TestProviderCurlExample(t *testing.T) {
	e2e.Require(t, "openssl and curl")
	for _, tool := range []string{"bash", "openssl", "curl", "od", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed", tool)
		}
	}
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	doc := connectProvider(t, b, "shell")
	snippet := doc.Find("#curl-example").Text()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", snippet).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"outcome":"applied"`) {
		t.Fatalf("snippet failed: %v\n%s\nsnippet:\n%s", err, out, snippet)
	}
}

func TestProviderRotateAndRetire(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	status, doc, _ := b.post("/t/acme/providers/crm/rotate", nil)
	newSecret := text(doc, "#provider-secret")
	if status != http.StatusOK || !strings.HasPrefix(newSecret, "whsec_") || newSecret == e.secret {
		t.Fatalf("rotate: %d, secret %q", status, newSecret)
	}
	if got := e.outcome("acme", "crm", e.secret, "r-1", snapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("old secret during rotation: %s", got)
	}
	if got := e.outcome("acme", "crm", newSecret, "r-2", snapshotBody("c-1", 2, `{"a":2}`)); got != "applied" {
		t.Fatalf("new secret during rotation: %s", got)
	}
	_, doc = b.get("/t/acme/providers/crm")
	if !strings.Contains(text(doc, "main"), "2 active secrets") || doc.Find("form[action$='/retire'][data-confirm]").Length() != 1 {
		t.Fatalf("provider page during rotation: %q", text(doc, "main"))
	}

	status, _, loc := b.post("/t/acme/providers/crm/retire", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm" {
		t.Fatalf("retire: %d to %q", status, loc)
	}
	_, doc = b.get(loc)
	if !strings.Contains(text(doc, ".flash"), "Retired 1 old secret") || !strings.Contains(text(doc, "main"), "1 active secret") {
		t.Fatalf("after retire: flash %q", text(doc, ".flash"))
	}
	if status, _ := e.deliver("acme", "crm", e.secret, "r-3", snapshotBody("c-1", 3, `{"a":3}`)); status != http.StatusUnauthorized {
		t.Fatalf("retired secret answered %d, want 401", status)
	}
	if got := e.outcome("acme", "crm", newSecret, "r-4", snapshotBody("c-1", 4, `{"a":4}`)); got != "applied" {
		t.Fatalf("new secret after retire: %s", got)
	}
}

func TestProviderTestEvent(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	_, doc := b.get("/t/acme/providers/crm")
	if len(providerRows(doc)) != 0 || !strings.Contains(text(doc, ".empty"), "Send a test event") {
		t.Fatalf("empty deliveries: %q", text(doc, ".empty"))
	}
	status, _, loc := b.post("/t/acme/providers/crm/test", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm" {
		t.Fatalf("test event: %d to %q", status, loc)
	}
	_, doc = b.get(loc)
	flash := text(doc, ".flash")
	if !strings.Contains(flash, "Test event answered 200 OK, outcome applied") || !strings.Contains(flash, `"delivery_id"`) {
		t.Fatalf("flash %q", flash)
	}
	if rows := providerRows(doc); len(rows) != 1 || !strings.Contains(rows[0], "200 valid 1") {
		t.Fatalf("recent deliveries %q", rows)
	}
}

func TestProviderListsRejectedDeliveries(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	body := snapshotBody("c-1", 1, `{"a":1}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	if status, _ := e.post("/webhooks/acme/crm", body, map[string]string{
		"webhook-id": "bad-1", "webhook-timestamp": ts, "webhook-signature": "v1,AAAA"}); status != http.StatusUnauthorized {
		t.Fatalf("bad signature answered %d", status)
	}
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	if status, _ := e.post("/webhooks/acme/crm", body, map[string]string{
		"webhook-id": "old-1", "webhook-timestamp": old, "webhook-signature": "v1,AAAA"}); status != http.StatusUnauthorized {
		t.Fatalf("old timestamp answered %d", status)
	}
	if status, _ := e.deliver1("ok-1", body); status != http.StatusOK {
		t.Fatalf("good delivery answered %d", status)
	}
	_, doc := b.get("/t/acme/providers/crm")
	rows := providerRows(doc)
	if len(rows) != 3 {
		t.Fatalf("recent deliveries %q, want 3", rows)
	}
	if !strings.Contains(rows[0], "200 valid 1") {
		t.Errorf("newest first: %q", rows[0])
	}
	if !strings.Contains(rows[1], "401 expired 0") || !strings.Contains(rows[1], "more than 5 minutes is refused") {
		t.Errorf("old timestamp row %q", rows[1])
	}
	if !strings.Contains(rows[2], "401 invalid 0") || !strings.Contains(rows[2], "no webhook-signature matches an active secret") {
		t.Errorf("bad signature row %q", rows[2])
	}
	_, doc = b.get("/t/acme/providers")
	if row := providerTableRows(doc, "table.providers"); len(row) != 1 || !strings.Contains(row[0], "crm standard") || !strings.Contains(row[0], " 1 3 ") {
		t.Errorf("providers row %q, want 3 deliveries in 24 h", row)
	}
}

func TestProviderScopeEdit(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	_, doc := b.get("/t/acme/providers/crm")
	if !strings.Contains(text(doc, "main"), "No scopes yet") {
		t.Fatalf("no empty state for scopes: %q", text(doc, "main"))
	}
	e.outcome("acme", "crm", e.secret, "s-1", snapshotBody("c-1", 1, `{"a":1}`))
	_, doc = b.get("/t/acme/providers/crm")
	row := doc.Find("table.scopes tbody tr").First()
	if !strings.Contains(row.Text(), "contact") || row.Find("input[name=ttl]").AttrOr("value", "") != "7" ||
		row.Find("select[name=ttl_unit] option[selected]").AttrOr("value", "") != "days" {
		t.Fatalf("default scope row %q", strings.Join(strings.Fields(row.Text()), " "))
	}
	if !strings.Contains(text(doc, "#ttl-help"), "it is judged by revision alone, so it can never roll a record back, but it will be logged as stale/redundant instead of duplicate") {
		t.Errorf("TTL help %q", text(doc, "#ttl-help"))
	}

	form := url.Values{"object_type": {"contact"}, "action": {"snapshot"}, "ttl": {"0.5"}, "ttl_unit": {"hours"},
		"identifier_rule": {"event_id"}, "enabled": {"on"}}
	status, doc, _ := b.post("/t/acme/providers/crm/scopes", form)
	if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "table.scopes [role=alert]"), "TTL must be between 1 hour and 90 days, got 30m0s") {
		t.Fatalf("30 minutes: %d %q", status, text(doc, "[role=alert]"))
	}
	if got := doc.Find("table.scopes input[name=ttl]").AttrOr("value", ""); got != "0.5" {
		t.Errorf("refused form shows ttl %q, want 0.5 as entered", got)
	}

	form.Set("ttl", "2")
	form.Set("ttl_unit", "days")
	form.Set("identifier_rule", "object_id+fields")
	if status, doc, _ = b.post("/t/acme/providers/crm/scopes", form); status != http.StatusUnprocessableEntity ||
		!strings.Contains(text(doc, "[role=alert]"), `identifier rule "object_id+fields" is not one of`) {
		t.Fatalf("bad identifier rule: %d %q", status, text(doc, "[role=alert]"))
	}

	form.Set("identifier_rule", "object_id+fields:job_title")
	form.Del("enabled")
	status, _, loc := b.post("/t/acme/providers/crm/scopes", form)
	if status != http.StatusSeeOther {
		t.Fatalf("2 days: %d", status)
	}
	_, doc = b.get(loc)
	row = doc.Find("table.scopes tbody tr").First()
	if !strings.Contains(text(doc, ".flash"), "Saved scope contact.snapshot: TTL 2 days") ||
		row.Find("input[name=ttl]").AttrOr("value", "") != "2" ||
		row.Find("input[name=identifier_rule]").AttrOr("value", "") != "object_id+fields:job_title" ||
		row.Find("input[name=enabled][checked]").Length() != 0 {
		t.Fatalf("after save: flash %q, row %v", text(doc, ".flash"), row.Find("input").Map(func(_ int, s *goquery.Selection) string {
			return s.AttrOr("name", "") + "=" + s.AttrOr("value", "")
		}))
	}
	p, err := e.store.Endpoint(context.Background(), "acme", "crm")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range p.Scopes {
		if sc.TTL != 48*time.Hour || sc.Enabled || sc.IdentifierRule.String() != "object_id+fields:job_title" {
			t.Fatalf("stored scope %+v", sc)
		}
	}

	// A scope set up before its first delivery.
	status, _, _ = b.post("/t/acme/providers/crm/scopes", url.Values{"new": {"1"}, "object_type": {"deal"}, "action": {"snapshot"},
		"ttl": {"12"}, "ttl_unit": {"hours"}, "identifier_rule": {""}, "enabled": {"on"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add scope: %d", status)
	}
	if _, doc = b.get("/t/acme/providers/crm"); !strings.Contains(strings.Join(providerTableRows(doc, "table.scopes"), "\n"), "deal snapshot") {
		t.Fatalf("added scope not listed: %q", providerTableRows(doc, "table.scopes"))
	}
}

func TestAPITokensConsole(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	if _, doc := b.get("/t/acme/tokens"); !strings.Contains(text(doc, ".empty"), "No API tokens yet") {
		t.Fatalf("empty state %q", text(doc, ".empty"))
	}
	if status, doc, _ := b.post("/t/acme/tokens", url.Values{"name": {"  "}}); status != http.StatusUnprocessableEntity ||
		!strings.Contains(text(doc, "[role=alert]"), "give the token a name") {
		t.Fatalf("empty name: %d %q", status, text(doc, "[role=alert]"))
	}

	status, doc, _ := b.post("/t/acme/tokens", url.Values{"name": {"reporting export"}})
	token := text(doc, "#api-token")
	if status != http.StatusOK || !strings.HasPrefix(token, "tmk_") || doc.Find(`button[data-copy="api-token"]`).Length() != 1 {
		t.Fatalf("create: %d, token %q", status, token)
	}
	if !strings.Contains(text(doc, "#api-example"), token) {
		t.Errorf("example %q does not use the token", text(doc, "#api-example"))
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Fatalf("new token answered %d", status)
	}

	_, doc = b.get("/t/acme/tokens")
	html, _ := doc.Html()
	row := doc.Find("table.tokens tbody tr").First()
	rowText := strings.Join(strings.Fields(row.Text()), " ")
	if strings.Contains(html, token) || !strings.Contains(rowText, "reporting export") || !strings.Contains(rowText, "active") ||
		row.Find("td").Eq(2).Text() == "never" {
		t.Fatalf("token list: row %q, shows token again: %v", rowText, strings.Contains(html, token))
	}
	revoke := row.Find("form[data-confirm]").AttrOr("action", "")
	status, _, loc := b.post(revoke, nil)
	if status != http.StatusSeeOther || loc != "/t/acme/tokens" {
		t.Fatalf("revoke %q: %d to %q", revoke, status, loc)
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusUnauthorized {
		t.Fatalf("revoked token answered %d, want 401", status)
	}
	_, doc = b.get(loc)
	if row := text(doc, "table.tokens tbody tr"); !strings.Contains(row, "revoked") || !strings.Contains(text(doc, ".flash"), "Token revoked") {
		t.Fatalf("after revoke: row %q, flash %q", row, text(doc, ".flash"))
	}
	if status, _, _ := b.post("/t/acme/tokens/999999/revoke", nil); status != http.StatusNotFound {
		t.Fatalf("unknown token revoke answered %d", status)
	}
}

// TestProviderPagesOtherTenant: a member of globex gets 404 on every
// provider and token route of acme, and changes nothing.
func TestProviderPagesOtherTenant(t *testing.T) {
	e := setup(t)
	e.provider("globex", "crm")
	token := e.token("acme")
	var tokenID string
	e.store.Pool().QueryRow(context.Background(), `SELECT id::text FROM api_tokens`).Scan(&tokenID)
	b := e.operator("x@example.com", false, "globex")

	for _, path := range []string{"/t/acme/providers", "/t/acme/providers/crm", "/t/acme/tokens"} {
		if status, _ := b.get(path); status != http.StatusNotFound {
			t.Errorf("GET %s answered %d, want 404", path, status)
		}
	}
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/t/acme/providers", url.Values{"name": {"intruder"}, "kind": {"standard"}}},
		{"/t/acme/providers/crm/rotate", nil},
		{"/t/acme/providers/crm/retire", nil},
		{"/t/acme/providers/crm/test", nil},
		{"/t/acme/providers/crm/scopes", url.Values{"object_type": {"contact"}, "action": {"snapshot"}, "ttl": {"2"}, "ttl_unit": {"hours"}}},
		{"/t/acme/tokens", url.Values{"name": {"intruder"}}},
		{"/t/acme/tokens/" + tokenID + "/revoke", nil},
	} {
		if status, _, _ := b.post(c.path, c.form); status != http.StatusNotFound {
			t.Errorf("POST %s answered %d, want 404", c.path, status)
		}
	}
	// Globex's own provider of the same name is not acme's.
	if status, _ := b.get("/t/globex/providers/crm"); status != http.StatusOK {
		t.Errorf("own provider page answered %d", status)
	}
	if status, _ := e.get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Errorf("acme's token stopped working: %d", status)
	}
	if got := e.outcome("acme", "crm", e.secret, "still-1", snapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Errorf("acme's secret after the attempts: %s", got)
	}
	if _, err := e.store.Endpoint(context.Background(), "acme", "intruder"); err == nil {
		t.Error("a provider was created in acme by a globex member")
	}
}

// consoleTestEvent presses the provider's test-event button and returns the
// flash shown after the redirect.
func consoleTestEvent(t *testing.T, b *browser, provider string) string {
	t.Helper()
	status, _, loc := b.post("/t/acme/providers/"+provider+"/test", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/"+provider {
		t.Fatalf("test event: %d to %q", status, loc)
	}
	_, doc := b.get(loc)
	return text(doc, ".flash")
}

func TestProviderConnectShippoHMAC(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	_, doc := b.get("/t/acme/providers")
	if doc.Find(`select[name=kind] option[value=shippo][disabled]`).Length() != 0 ||
		doc.Find(`select[name=kind] option[value=salesforce][disabled]`).Length() != 0 {
		t.Fatal("shippo and salesforce should be connectable")
	}
	if legends := doc.Find("fieldset legend").Text(); !strings.Contains(legends, "For Shippo") || !strings.Contains(legends, "For Salesforce") {
		t.Fatalf("kind fieldsets %q", legends)
	}

	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {"ship"}, "kind": {"shippo"}, "shippo_auth": {"hmac"},
		"org_id": {"ignored"}})
	if status != http.StatusOK {
		t.Fatalf("connect shippo: %d %q", status, text(doc, "main"))
	}
	secret, endpoint := text(doc, "#provider-secret"), text(doc, "#endpoint-url")
	if len(secret) != 64 || endpoint != e.srv.URL+"/webhooks/acme/ship" || !strings.Contains(text(doc, "main"), "Shippo-Auth-Signature") {
		t.Fatalf("created page: secret %q endpoint %q", secret, endpoint)
	}
	body := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"9205","tracking_status":{"object_id":"ts_1","status_date":"2026-01-01T10:00:00Z"}}}`)
	status, answer := e.post("/webhooks/acme/ship", body, map[string]string{"Shippo-Auth-Signature": provider.SignShippo(secret, time.Now().Unix(), body)})
	if got := outcome(t, status, answer); got != "applied" {
		t.Fatalf("delivery signed with the shown secret: %s", got)
	}

	status, doc = b.get("/t/acme/providers/ship")
	html, _ := doc.Html()
	if status != http.StatusOK || strings.Contains(html, secret) || text(doc, "#endpoint-url") != endpoint ||
		!strings.Contains(text(doc, ".provider-settings dd"), "hmac") {
		t.Fatalf("provider page: %d, endpoint %q, settings %q, shows secret %v", status, text(doc, "#endpoint-url"),
			text(doc, ".provider-settings"), strings.Contains(html, secret))
	}
	if flash := consoleTestEvent(t, b, "ship"); !strings.Contains(flash, "Test event answered 200 OK, outcome applied") {
		t.Fatalf("test event flash %q", flash)
	}

	// Rotation gives a new hmac secret; both work until the old is retired.
	status, doc, _ = b.post("/t/acme/providers/ship/rotate", nil)
	rotated := text(doc, "#provider-secret")
	if status != http.StatusOK || len(rotated) != 64 || rotated == secret {
		t.Fatalf("rotate: %d, secret %q", status, rotated)
	}
	body2 := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"9205","tracking_status":{"object_id":"ts_2","status_date":"2026-01-02T10:00:00Z"}}}`)
	status, answer = e.post("/webhooks/acme/ship", body2, map[string]string{"Shippo-Auth-Signature": provider.SignShippo(rotated, time.Now().Unix(), body2)})
	if got := outcome(t, status, answer); got != "applied" {
		t.Fatalf("delivery signed with the rotated secret: %s", got)
	}
}

func TestProviderConnectShippoToken(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {"ship-t"}, "kind": {"shippo"}, "shippo_auth": {"token"}})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %q", status, text(doc, "main"))
	}
	token := text(doc, "#provider-secret")
	endpoint := text(doc, "#endpoint-url")
	if token == "" || endpoint != e.srv.URL+"/webhooks/acme/ship-t?token="+url.QueryEscape(token) {
		t.Fatalf("token %q, endpoint %q", token, endpoint)
	}
	body := []byte(`{"event":"track_updated","test":false,"data":{"carrier":"usps","tracking_number":"1","tracking_status":{"object_id":"ts_1","status_date":"2026-01-01T10:00:00Z"}}}`)
	if got := postedOutcome(t, endpoint, body); got != "applied" {
		t.Fatalf("delivery to the shown URL: %s", got)
	}

	_, doc = b.get("/t/acme/providers/ship-t")
	html, _ := doc.Html()
	if strings.Contains(html, token) || text(doc, "#endpoint-url") != e.srv.URL+"/webhooks/acme/ship-t?token=…" ||
		!strings.Contains(text(doc, ".url-note"), "shown once") {
		t.Fatalf("provider page: endpoint %q, note %q, shows token %v", text(doc, "#endpoint-url"), text(doc, ".url-note"), strings.Contains(html, token))
	}
	if flash := consoleTestEvent(t, b, "ship-t"); !strings.Contains(flash, "Test event answered 200 OK, outcome applied") {
		t.Fatalf("test event flash %q", flash)
	}
	_, doc = b.get("/t/acme/providers/ship-t")
	if rows := providerRows(doc); len(rows) != 2 || !strings.Contains(rows[0], "200 valid 1") {
		t.Fatalf("recent deliveries %q", rows)
	}

	// A short secret is refused with the form's wording.
	status, doc, _ = b.post("/t/acme/providers", url.Values{"name": {"ship-x"}, "kind": {"shippo"}, "shippo_auth": {"token"}, "shippo_secret": {"short"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[role=alert]"), "Secret must be at least 16 printable characters") {
		t.Fatalf("short secret: %d %q", status, text(doc, "[role=alert]"))
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
	return outcome(t, resp.StatusCode, answer)
}

func TestProviderConnectSalesforce(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
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
		status, doc, _ := b.post("/t/acme/providers", c.form)
		if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[role=alert]"), c.want) {
			t.Errorf("%v: %d %q, want 422 with %q", c.form, status, text(doc, "[role=alert]"), c.want)
		}
		if got := doc.Find(`input[name=org_id]`).AttrOr("value", ""); got != c.form.Get("org_id") {
			t.Errorf("form shows org id %q, want %q as entered", got, c.form.Get("org_id"))
		}
	}

	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {"sf"}, "kind": {"salesforce"},
		"org_id": {"00D5e000000AbCdEAK"}, "allowed_networks": {""}, "revision_field": {""}, "shippo_secret": {"ignored-for-salesforce"}})
	if status != http.StatusOK {
		t.Fatalf("connect: %d %q", status, text(doc, "[role=alert]"))
	}
	if doc.Find("#provider-secret").Length() != 0 || text(doc, "#endpoint-url") != e.srv.URL+"/webhooks/acme/sf" ||
		!strings.Contains(text(doc, "main"), "Organization Id") {
		t.Fatalf("created page: %q", text(doc, "main"))
	}
	p, err := e.store.Endpoint(context.Background(), "acme", "sf")
	if err != nil || p.Config["org_id"] != "00D5e000000AbCdEAK" || p.Config["revision_field"] != "SystemModstamp" {
		t.Fatalf("stored provider %+v: %v", p.Config, err)
	}

	_, doc = b.get("/t/acme/providers/sf")
	settings := text(doc, ".provider-settings")
	if !strings.Contains(settings, "00D5e000000AbCdEAK") || !strings.Contains(settings, "SystemModstamp") ||
		!strings.Contains(text(doc, ".auth-note"), "Organization Id") {
		t.Fatalf("provider page settings %q, note %q", settings, text(doc, ".auth-note"))
	}
	if doc.Find("form[action$='/rotate']").Length() != 0 || doc.Find("form[action$='/test']").Length() != 1 {
		t.Fatal("salesforce page should offer the test event but not rotation")
	}
	flash := consoleTestEvent(t, b, "sf")
	if !strings.Contains(flash, "Test event answered 200 OK, Ack true, outcome applied") || !strings.Contains(flash, "<Ack>true</Ack>") {
		t.Fatalf("test event flash %q", flash)
	}

	status, _, loc := b.post("/t/acme/providers/sf/rotate", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/sf" {
		t.Fatalf("rotate salesforce: %d to %q", status, loc)
	}
	if _, doc = b.get(loc); !strings.Contains(text(doc, ".flash"), "no secret to rotate") {
		t.Fatalf("rotate flash %q", text(doc, ".flash"))
	}
	if n := e.sfCount(`SELECT count(*) FROM provider_secrets s JOIN providers p ON p.id = s.provider_id WHERE p.name = 'sf'`); n != 0 {
		t.Fatalf("salesforce provider has %d secrets", n)
	}
}

// TestProviderTestEventSalesforceNetworks: with allowed networks, the test
// event comes from inside the first one and is accepted.
func TestProviderTestEventSalesforceNetworks(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	e.sfProvider("sfnet", map[string]string{"org_id": sfOrg, "allowed_networks": "13.108.0.0/14", "revision_field": "SystemModstamp"})
	if flash := consoleTestEvent(t, b, "sfnet"); !strings.Contains(flash, "outcome applied") {
		t.Fatalf("test event flash %q", flash)
	}
}

// hubspotDelivery posts a HubSpot batch to the provider, signed v3 with
// secret over the public URL (the test server's), and returns the answer.
func hubspotDelivery(e *env, name, secret string, body []byte) (int, map[string]any) {
	e.t.Helper()
	path := "/webhooks/acme/" + name
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	return e.post(path, body, map[string]string{
		"Content-Type":                "application/json",
		"X-HubSpot-Request-Timestamp": ts,
		"X-HubSpot-Signature-v3":      provider.SignHubSpotV3(secret, http.MethodPost, e.srv.URL+path, body, ts),
	})
}

// hubspotOutcome delivers like hubspotDelivery and returns the single result's outcome.
func hubspotOutcome(e *env, provider, secret string, body []byte) string {
	e.t.Helper()
	status, answer := hubspotDelivery(e, provider, secret, body)
	return outcome(e.t, status, answer)
}

func hubspotBatch(eventID int64, value string) []byte {
	return []byte(`[{"eventId":` + strconv.FormatInt(eventID, 10) + `,"subscriptionId":2101003,"portalId":44120077,"appId":1530011,"occurredAt":` +
		strconv.FormatInt(time.Now().UnixMilli()+eventID, 10) + `,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":77001,` +
		`"propertyName":"jobtitle","propertyValue":"` + value + `","changeSource":"CRM_UI"}]`)
}

func TestProviderConnectHubSpot(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	_, doc := b.get("/t/acme/providers")
	if !strings.Contains(doc.Find("fieldset legend").Text(), "For HubSpot") || doc.Find(`input[name=hubspot_allow_v1][type=checkbox]`).Length() != 1 ||
		!strings.Contains(text(doc, "#hubspot-v1-hint"), "no replay protection") {
		t.Fatalf("connect form: legends %q", doc.Find("fieldset legend").Text())
	}

	// The client secret is HubSpot's: without it the form is refused.
	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {"hub"}, "kind": {"hubspot"}, "hubspot_allow_v1": {"true"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[role=alert]"), "paste the client secret of your HubSpot app (Settings → Auth)") {
		t.Fatalf("missing secret: %d %q", status, text(doc, "[role=alert]"))
	}
	if doc.Find(`input[name=hubspot_allow_v1][checked]`).Length() != 1 || doc.Find(`input[name=name]`).AttrOr("value", "") != "hub" {
		t.Error("refused form lost what was entered")
	}
	if _, doc := b.get("/t/acme/providers"); strings.Contains(text(doc, "table.providers"), "hub") {
		t.Fatal("a refused hubspot provider was created")
	}

	const secret = "c0ffee00-1234-4abc-9def-0123456789ab"
	status, doc, _ = b.post("/t/acme/providers", url.Values{"name": {"hub"}, "kind": {"hubspot"}, "hubspot_secret": {secret}})
	html, _ := doc.Html()
	endpoint := e.srv.URL + "/webhooks/acme/hub"
	if status != http.StatusOK || strings.Contains(html, secret) || doc.Find("#provider-secret").Length() != 0 ||
		text(doc, "#endpoint-url") != endpoint || !strings.Contains(text(doc, ".secret-stored"), "stored") ||
		!strings.Contains(text(doc, ".url-note"), "--public-url") {
		t.Fatalf("created page: %d, endpoint %q, stored %q, note %q, shows secret %v", status, text(doc, "#endpoint-url"),
			text(doc, ".secret-stored"), text(doc, ".url-note"), strings.Contains(html, secret))
	}
	p, err := e.store.Endpoint(context.Background(), "acme", "hub")
	if err != nil || p.Config["allow_v1"] != "false" || len(p.Secrets) != 1 || p.Secrets[0] != secret {
		t.Fatalf("stored provider %+v: %v", p.Config, err)
	}

	status, doc = b.get("/t/acme/providers/hub")
	html, _ = doc.Html()
	if status != http.StatusOK || strings.Contains(html, secret) || text(doc, "#endpoint-url") != endpoint ||
		!strings.Contains(text(doc, ".provider-settings"), "allow_v1") || text(doc, ".provider-settings dd") != "false" ||
		!strings.Contains(text(doc, ".url-note"), "TIDEMARK_PUBLIC_URL") {
		t.Fatalf("provider page: %d, endpoint %q, settings %q, note %q, shows secret %v", status, text(doc, "#endpoint-url"),
			text(doc, ".provider-settings"), text(doc, ".url-note"), strings.Contains(html, secret))
	}
	if doc.Find(`form[action$='/rotate'] input[name=new_secret][required]`).Length() != 1 {
		t.Fatal("hubspot rotation should ask for the new client secret")
	}

	// A delivery HubSpot signs with the client secret over the URL is applied.
	if got := hubspotOutcome(e, "hub", secret, hubspotBatch(1, "Director")); got != "applied" {
		t.Fatalf("delivery signed with the client secret: %s", got)
	}
	if status, _ := hubspotDelivery(e, "hub", "not-the-secret", hubspotBatch(2, "CTO")); status != http.StatusUnauthorized {
		t.Fatalf("delivery with a wrong secret answered %d, want 401", status)
	}

	if flash := consoleTestEvent(t, b, "hub"); !strings.Contains(flash, "Test event answered 200 OK, outcome applied") {
		t.Fatalf("test event flash %q", flash)
	}

	// Rotation takes the pasted new secret; without one it is refused.
	status, _, loc := b.post("/t/acme/providers/hub/rotate", url.Values{"new_secret": {""}})
	if status != http.StatusSeeOther || loc != "/t/acme/providers/hub" {
		t.Fatalf("rotate without secret: %d to %q", status, loc)
	}
	if _, doc = b.get(loc); !strings.Contains(text(doc, ".flash"), "paste the client secret") {
		t.Fatalf("rotate without secret flash %q", text(doc, ".flash"))
	}
	const rotated = "feedface-5678-4abc-9def-ba9876543210"
	status, doc, _ = b.post("/t/acme/providers/hub/rotate", url.Values{"new_secret": {rotated}})
	html, _ = doc.Html()
	if status != http.StatusOK || strings.Contains(html, rotated) || strings.Contains(html, secret) || !strings.Contains(text(doc, "h1"), "New client secret") {
		t.Fatalf("rotate: %d %q, shows a secret %v", status, text(doc, "main"), strings.Contains(html, rotated) || strings.Contains(html, secret))
	}
	if got := hubspotOutcome(e, "hub", secret, hubspotBatch(3, "VP")); got != "applied" {
		t.Fatalf("old secret during rotation: %s", got)
	}
	if got := hubspotOutcome(e, "hub", rotated, hubspotBatch(4, "CEO")); got != "applied" {
		t.Fatalf("new secret during rotation: %s", got)
	}
	if flash := consoleTestEvent(t, b, "hub"); !strings.Contains(flash, "Test event answered 200 OK, outcome applied") {
		t.Fatalf("test event after rotation: flash %q", flash)
	}
	_, doc = b.get("/t/acme/providers/hub")
	if !strings.Contains(text(doc, "main"), "2 active secrets") {
		t.Fatalf("provider page during rotation: %q", text(doc, "main"))
	}
}

// TestProviderConnectHubSpotV1: allow_v1 is saved from the checkbox and a
// v1-signed delivery is then accepted.
func TestProviderConnectHubSpotV1(t *testing.T) {
	e := setup(t)
	b := e.operator("ops@example.com", false, "acme")
	const secret = "legacy-secret-0123456789"
	status, doc, _ := b.post("/t/acme/providers", url.Values{"name": {"hub1"}, "kind": {"hubspot"}, "hubspot_secret": {secret}, "hubspot_allow_v1": {"true"}})
	if status != http.StatusOK || !strings.Contains(text(doc, ".auth-intro"), "no replay protection") {
		t.Fatalf("connect: %d %q", status, text(doc, "main"))
	}
	_, doc = b.get("/t/acme/providers/hub1")
	if text(doc, ".provider-settings dd") != "true" {
		t.Fatalf("settings %q", text(doc, ".provider-settings"))
	}
	body := hubspotBatch(1, "Director")
	status, answer := e.post("/webhooks/acme/hub1", body, map[string]string{"Content-Type": "application/json",
		"X-HubSpot-Signature": provider.SignHubSpotV1(secret, body), "X-HubSpot-Signature-Version": "v1"})
	if got := outcome(t, status, answer); got != "applied" {
		t.Fatalf("v1 delivery: %s", got)
	}
}
