package console_test

import (
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// connectProvider submits the connect form and returns the page showing
// the new provider's secret and endpoint.
func connectProvider(t *testing.T, b *webtest.Browser, name string) *goquery.Document {
	t.Helper()
	status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {name}, "kind": {"standard"}})
	if status != http.StatusOK {
		t.Fatalf("connect %s answered %d: %s", name, status, webtest.Text(doc, "main"))
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
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")

	status, doc := b.Get("/t/acme/providers")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, "table.providers"), "crm") {
		t.Fatalf("providers page: %d, table %q", status, webtest.Text(doc, "table.providers"))
	}
	for _, kind := range provider.Names() {
		if opt := doc.Find(`a.kind-choice[href="/t/acme/providers?kind=` + kind + `#connect"]`); opt.Length() != 1 {
			t.Errorf("the connect form offers no %s choice", kind)
		}
	}

	doc = connectProvider(t, b, "billing")
	secret := webtest.Text(doc, "#provider-secret")
	endpoint := webtest.Text(doc, "#endpoint-url")
	if !strings.HasPrefix(secret, "whsec_") || endpoint != e.Srv.URL+"/webhooks/acme/billing" {
		t.Fatalf("created page shows secret %q and endpoint %q", secret, endpoint)
	}
	for _, id := range []string{"provider-secret", "endpoint-url", "curl-example", "send-example"} {
		if doc.Find(`button[data-copy="`+id+`"]`).Length() != 1 {
			t.Errorf("no copy button for #%s", id)
		}
	}
	if send := webtest.Text(doc, "#send-example"); send != "tidemark send --url "+endpoint+" --secret "+secret {
		t.Errorf("send example %q", send)
	}
	if got := e.Outcome("acme", "billing", secret, "b-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("delivery signed with the shown secret: %s", got)
	}

	for _, path := range []string{"/t/acme/providers/billing", "/t/acme/providers"} {
		status, doc = b.Get(path)
		html, _ := doc.Html()
		if status != http.StatusOK || strings.Contains(html, secret) || strings.Contains(html, strings.TrimPrefix(secret, "whsec_")) {
			t.Fatalf("%s: %d, shows the secret again: %v", path, status, strings.Contains(html, secret))
		}
	}
	status, doc = b.Get("/t/acme/providers/billing")
	if status != http.StatusOK || webtest.Text(doc, "#endpoint-url") != endpoint || !strings.Contains(webtest.Text(doc, "main"), "1 active secret") {
		t.Fatalf("provider page: %d, endpoint %q, main %q", status, webtest.Text(doc, "#endpoint-url"), webtest.Text(doc, "main"))
	}
	if rows := providerRows(doc); len(rows) != 1 || !strings.Contains(rows[0], "200") || !strings.Contains(rows[0], "valid") {
		t.Fatalf("recent deliveries %q, want the one accepted delivery", rows)
	}
}

func TestProviderConnectValidation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	for _, c := range []struct{ name, kind, want string }{
		{"Bad Name", "standard", "must be 1-63 characters of a-z, 0-9 and '-'"},
		{"-crm", "standard", "starting with a letter or digit"},
		{"crm", "standard", `a provider named "crm" already exists`},
		{"hub", "hubspot", "paste the client secret of your HubSpot app (Settings → Auth)"},
		{"odd", "telepathy", `provider kind "telepathy" is not one of`},
	} {
		status, doc, _ := b.Post("/t/acme/providers", url.Values{"name": {c.name}, "kind": {c.kind}})
		if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "[role=alert]"), c.want) {
			t.Errorf("%s/%s: %d %q, want 422 with %q", c.kind, c.name, status, webtest.Text(doc, "[role=alert]"), c.want)
		}
		if _, known := provider.Lookup(c.kind); !known {
			// A kind that does not exist: back to the choice of kinds.
			if doc.Find("a.kind-choice").Length() != len(provider.Names()) {
				t.Errorf("%s: no choice of kinds", c.kind)
			}
			continue
		}
		if got := doc.Find(`input[name=name]`).AttrOr("value", ""); got != c.name {
			t.Errorf("form shows name %q, want %q as entered", got, c.name)
		}
		if got := doc.Find(`input[type=hidden][name=kind]`).AttrOr("value", ""); got != c.kind {
			t.Errorf("refused form of kind %q", got)
		}
	}
	if _, doc := b.Get("/t/acme/providers"); doc.Find("table.providers tbody tr").Length() != 1 {
		t.Fatal("a refused provider was created")
	}
}

// TestProviderCurlExample runs the shown shell snippet against the server.
func TestProviderCurlExample(t *testing.T) {
	t.Parallel()
	e2e.Require(t, "openssl and curl")
	for _, tool := range []string{"bash", "openssl", "curl", "od", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed", tool)
		}
	}
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
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
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc, _ := b.Post("/t/acme/providers/crm/rotate", nil)
	newSecret := webtest.Text(doc, "#provider-secret")
	if status != http.StatusOK || !strings.HasPrefix(newSecret, "whsec_") || newSecret == e.Secret {
		t.Fatalf("rotate: %d, secret %q", status, newSecret)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "r-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Fatalf("old secret during rotation: %s", got)
	}
	if got := e.Outcome("acme", "crm", newSecret, "r-2", webtest.SnapshotBody("c-1", 2, `{"a":2}`)); got != "applied" {
		t.Fatalf("new secret during rotation: %s", got)
	}
	_, doc = b.Get("/t/acme/providers/crm")
	if !strings.Contains(webtest.Text(doc, "main"), "2 active secrets") || doc.Find("form[action$='/retire'][data-confirm]").Length() != 1 {
		t.Fatalf("provider page during rotation: %q", webtest.Text(doc, "main"))
	}

	status, _, loc := b.Post("/t/acme/providers/crm/retire", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm" {
		t.Fatalf("retire: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if !strings.Contains(webtest.Text(doc, ".flash"), "Retired 1 old secret") || !strings.Contains(webtest.Text(doc, "main"), "1 active secret") {
		t.Fatalf("after retire: flash %q", webtest.Text(doc, ".flash"))
	}
	if status, _ := e.Deliver("acme", "crm", e.Secret, "r-3", webtest.SnapshotBody("c-1", 3, `{"a":3}`)); status != http.StatusUnauthorized {
		t.Fatalf("retired secret answered %d, want 401", status)
	}
	if got := e.Outcome("acme", "crm", newSecret, "r-4", webtest.SnapshotBody("c-1", 4, `{"a":4}`)); got != "applied" {
		t.Fatalf("new secret after retire: %s", got)
	}
}

func TestProviderTestEvent(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/providers/crm")
	if len(providerRows(doc)) != 0 || !strings.Contains(webtest.Text(doc, ".empty"), "Send a test event") {
		t.Fatalf("empty deliveries: %q", webtest.Text(doc, ".empty"))
	}
	status, _, loc := b.Post("/t/acme/providers/crm/test", nil)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/crm" {
		t.Fatalf("test event: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	flash := webtest.Text(doc, ".flash")
	if !regexp.MustCompile(`^Test event sent: applied \(contact tidemark-test, revision \d+\)\.$`).MatchString(flash) {
		t.Fatalf("flash %q", flash)
	}
	if rows := providerRows(doc); len(rows) != 1 || !strings.Contains(rows[0], "200 valid 1") {
		t.Fatalf("recent deliveries %q", rows)
	}
}

func TestProviderListsRejectedDeliveries(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	body := webtest.SnapshotBody("c-1", 1, `{"a":1}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	if status, _ := e.Post("/webhooks/acme/crm", body, map[string]string{
		"webhook-id": "bad-1", "webhook-timestamp": ts, "webhook-signature": "v1,AAAA"}); status != http.StatusUnauthorized {
		t.Fatalf("bad signature answered %d", status)
	}
	// One refused delivery a second is kept with its reason: the next one
	// comes in the next second.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	if status, _ := e.Post("/webhooks/acme/crm", body, map[string]string{
		"webhook-id": "old-1", "webhook-timestamp": old, "webhook-signature": "v1,AAAA"}); status != http.StatusUnauthorized {
		t.Fatalf("old timestamp answered %d", status)
	}
	if status, _ := e.Deliver1("ok-1", body); status != http.StatusOK {
		t.Fatalf("good delivery answered %d", status)
	}
	e.FlushRefusals()
	_, doc := b.Get("/t/acme/providers/crm")
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
	_, doc = b.Get("/t/acme/providers")
	if row := providerTableRows(doc, "table.providers"); len(row) != 1 || !strings.Contains(row[0], "crm standard") || !strings.Contains(row[0], " 1 3 ") {
		t.Errorf("providers row %q, want 3 deliveries in 24 h", row)
	}
}

func TestProviderScopeEdit(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/providers/crm")
	if !strings.Contains(webtest.Text(doc, "main"), "No scopes yet") {
		t.Fatalf("no empty state for scopes: %q", webtest.Text(doc, "main"))
	}
	e.Outcome("acme", "crm", e.Secret, "s-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`))
	_, doc = b.Get("/t/acme/providers/crm")
	row := doc.Find("table.scopes tbody tr").First()
	if !strings.Contains(row.Text(), "contact") || row.Find("input[name=ttl]").AttrOr("value", "") != "7" ||
		row.Find("select[name=ttl_unit] option[selected]").AttrOr("value", "") != "days" {
		t.Fatalf("default scope row %q", strings.Join(strings.Fields(row.Text()), " "))
	}
	if !strings.Contains(webtest.Text(doc, "#ttl-help"), "it is judged by revision alone, so it can never roll a record back, but it will be logged as stale/redundant instead of duplicate") {
		t.Errorf("TTL help %q", webtest.Text(doc, "#ttl-help"))
	}

	form := url.Values{"object_type": {"contact"}, "action": {"snapshot"}, "ttl": {"12.5"}, "ttl_unit": {"hours"},
		"identifier_rule": {"event_id"}, "enabled": {"on"}}
	status, doc, _ := b.Post("/t/acme/providers/crm/scopes", form)
	if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "table.scopes [role=alert]"), "TTL must be between 24 hours and 90 days, got 12h30m0s") {
		t.Fatalf("12.5 hours: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}
	if got := doc.Find("table.scopes input[name=ttl]").AttrOr("value", ""); got != "12.5" {
		t.Errorf("refused form shows ttl %q, want 12.5 as entered", got)
	}

	form.Set("ttl", "2")
	form.Set("ttl_unit", "days")
	form.Set("identifier_rule", "object_id+fields")
	if status, doc, _ = b.Post("/t/acme/providers/crm/scopes", form); status != http.StatusUnprocessableEntity ||
		!strings.Contains(webtest.Text(doc, "[role=alert]"), `identifier rule "object_id+fields" is not one of`) {
		t.Fatalf("bad identifier rule: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}

	form.Set("identifier_rule", "object_id+fields:job_title")
	form.Del("enabled")
	status, _, loc := b.Post("/t/acme/providers/crm/scopes", form)
	if status != http.StatusSeeOther {
		t.Fatalf("2 days: %d", status)
	}
	_, doc = b.Get(loc)
	row = doc.Find("table.scopes tbody tr").First()
	if !strings.Contains(webtest.Text(doc, ".flash"), "Saved scope contact.snapshot: TTL 2 days") ||
		row.Find("input[name=ttl]").AttrOr("value", "") != "2" ||
		row.Find("input[name=identifier_rule]").AttrOr("value", "") != "object_id+fields:job_title" ||
		row.Find("input[name=enabled][checked]").Length() != 0 {
		t.Fatalf("after save: flash %q, row %v", webtest.Text(doc, ".flash"), row.Find("input").Map(func(_ int, s *goquery.Selection) string {
			return s.AttrOr("name", "") + "=" + s.AttrOr("value", "")
		}))
	}
	p, err := e.Store.Endpoint(context.Background(), "acme", "crm")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range p.Scopes {
		if sc.TTL != 48*time.Hour || sc.Enabled || sc.IdentifierRule.String() != "object_id+fields:job_title" {
			t.Fatalf("stored scope %+v", sc)
		}
	}

	// A scope set up before its first delivery.
	status, _, _ = b.Post("/t/acme/providers/crm/scopes", url.Values{"new": {"1"}, "object_type": {"deal"}, "action": {"snapshot"},
		"ttl": {"36"}, "ttl_unit": {"hours"}, "identifier_rule": {""}, "enabled": {"on"}})
	if status != http.StatusSeeOther {
		t.Fatalf("add scope: %d", status)
	}
	if _, doc = b.Get("/t/acme/providers/crm"); !strings.Contains(strings.Join(providerTableRows(doc, "table.scopes"), "\n"), "deal snapshot") {
		t.Fatalf("added scope not listed: %q", providerTableRows(doc, "table.scopes"))
	}
}

// TestProviderPagesOtherTenant: a member of globex gets 404 on every
// provider and token route of acme, and changes nothing.
func TestProviderPagesOtherTenant(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Provider("globex", "crm")
	token := e.Token("acme")
	var tokenID string
	e.Store.Pool().QueryRow(context.Background(), `SELECT id::text FROM api_tokens`).Scan(&tokenID)
	b := e.Operator("x@example.com", false, "globex")

	for _, path := range []string{"/t/acme/providers", "/t/acme/providers/crm", "/t/acme/tokens"} {
		if status, _ := b.Get(path); status != http.StatusNotFound {
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
		{"/t/acme/providers/crm/scopes", url.Values{"object_type": {"contact"}, "action": {"snapshot"}, "ttl": {"2"}, "ttl_unit": {"days"}}},
		{"/t/acme/tokens", url.Values{"name": {"intruder"}}},
		{"/t/acme/tokens/" + tokenID + "/revoke", nil},
	} {
		if status, _, _ := b.Post(c.path, c.form); status != http.StatusNotFound {
			t.Errorf("POST %s answered %d, want 404", c.path, status)
		}
	}
	// Globex's own provider of the same name is not acme's.
	if status, _ := b.Get("/t/globex/providers/crm"); status != http.StatusOK {
		t.Errorf("own provider page answered %d", status)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/stats", token); status != http.StatusOK {
		t.Errorf("acme's token stopped working: %d", status)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "still-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`)); got != "applied" {
		t.Errorf("acme's secret after the attempts: %s", got)
	}
	if _, err := e.Store.Endpoint(context.Background(), "acme", "intruder"); err == nil {
		t.Error("a provider was created in acme by a globex member")
	}
}

// TestProviderPageShowsLimits: a provider's page shows its body limit and
// future-skew window beside its settings.
func TestProviderPageShowsLimits(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	limits := func() map[string]string {
		t.Helper()
		status, doc := b.Get("/t/acme/providers/crm")
		if status != http.StatusOK {
			t.Fatalf("provider page: %d", status)
		}
		out := map[string]string{}
		doc.Find("dl.provider-settings dt").Each(func(_ int, dt *goquery.Selection) {
			out[strings.TrimSpace(dt.Text())] = strings.TrimSpace(dt.Next().Text())
		})
		return out
	}
	if got := limits(); got["Body limit"] != "1 MiB (the kind's default)" || got["Future skew allowed"] != "5m0s" {
		t.Fatalf("limits shown: %v", got)
	}
	ctx := webtest.CliContext()
	p, err := e.Store.ProviderSummary(ctx, e.Tenant("acme").ID, "crm")
	if err != nil {
		t.Fatal(err)
	}
	body, skew := int64(5<<20), 90*time.Second
	if _, err := e.Store.SetProviderLimits(ctx, p.TenantID, p.ID, domain.ProviderLimits{MaxBody: &body, MaxFutureSkew: &skew}); err != nil {
		t.Fatal(err)
	}
	if got := limits(); got["Body limit"] != "5 MiB" || got["Future skew allowed"] != "1m30s" {
		t.Fatalf("limits shown after a change: %v", got)
	}
}
