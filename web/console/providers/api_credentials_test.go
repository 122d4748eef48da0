package providers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/testlog"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

const (
	consoleToken  = "pat-na1-console-0123456789abcdef"
	consoleSecret = "CONSOLESECRET0123456789ABCDEF"
)

// apiSetup is a server logging to log, with acme's hubspot provider hub and
// salesforce provider sf beside its standard crm, and an owner signed in.
func apiSetup(t *testing.T) (*webtest.Env, *webtest.Browser, *testlog.Buffer) {
	t.Helper()
	logger, log := testlog.Logger()
	e := webtest.SetupWith(t, postgres.DefaultReadTimeout, logger)
	acme := e.Tenant("acme").ID
	if _, err := e.Store.ConnectProvider(webtest.CliContext(), acme, "hub", "hubspot", "hubspot-client-secret-0123456789", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.ConnectProvider(webtest.CliContext(), acme, "sf", "salesforce", "", map[string]string{"org_id": "00D5e000000AbCdEAK"}); err != nil {
		t.Fatal(err)
	}
	return e, e.Operator("owner@example.com", false, "acme"), log
}

// stored reads a provider's API credentials as backfill would.
func stored(t *testing.T, e *webtest.Env, name string) (pull.Credentials, bool) {
	t.Helper()
	acme := e.Tenant("acme").ID
	p, err := e.Store.ProviderSummary(context.Background(), acme, name)
	if err != nil {
		t.Fatal(err)
	}
	c, ok, err := e.Store.APICredentials(context.Background(), acme, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c, ok
}

// shownState is the API credentials' state on a page: "Not set", or each
// term and its definition as "term: definition", one a line.
func shownState(doc *goquery.Document) string {
	var lines []string
	doc.Find("#api-credentials dl.api-credentials-state dt").Each(func(_ int, dt *goquery.Selection) {
		lines = append(lines, dt.Text()+": "+strings.Join(strings.Fields(dt.Next().Text()), " "))
	})
	if len(lines) == 0 {
		return webtest.Text(doc, "#api-credentials .api-credentials-state")
	}
	return strings.Join(lines, "\n")
}

// pageHTML is the whole page, to look for a secret in.
func pageHTML(doc *goquery.Document) string {
	h, _ := doc.Html()
	return h
}

// TestOwnerSetsAndClearsAPICredentials: an owner sets a HubSpot token,
// sees that it is set and by whom but never the token, replaces it, and
// clears it; each change is audited, and neither the page nor the log ever
// holds the token.
func TestOwnerSetsAndClearsAPICredentials(t *testing.T) {
	t.Parallel()
	e, b, log := apiSetup(t)

	status, doc := b.Get("/t/acme/providers/hub")
	section := doc.Find("section#api-credentials")
	if status != http.StatusOK || webtest.Text(doc, "#api-credentials h2") != "API credentials" ||
		!strings.Contains(webtest.Text(doc, "#api-credentials .api-credentials-state"), "Not set") {
		t.Fatalf("before: %d %q", status, webtest.Text(doc, "#api-credentials"))
	}
	if got := strings.Join(inputNames(section.Find("form.api-credentials-set")), " "); got != "token budget" {
		t.Fatalf("hubspot's form fields %q, want the token and the budget", got)
	}
	if section.Find("input[name=token]").AttrOr("type", "") != "password" || section.Find("input[name=budget]").AttrOr("value", "") != "50" ||
		section.Find("form.api-credentials-clear").Length() != 0 {
		t.Fatalf("form: token input %q, budget %q, a clear button %v", section.Find("input[name=token]").AttrOr("type", ""),
			section.Find("input[name=budget]").AttrOr("value", ""), section.Find("form.api-credentials-clear").Length() != 0)
	}

	status, _, loc := b.Post("/t/acme/providers/hub/api-credentials", url.Values{"token": {" " + consoleToken + " "}, "budget": {"30"},
		"allow_private": {"true"}})
	if status != http.StatusSeeOther || loc != "/t/acme/providers/hub#api-credentials" {
		t.Fatalf("set: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if got := webtest.ShownFlash(doc); got != "Saved the API credentials: access token; at most 30% of the API budget." {
		t.Errorf("flash %q", got)
	}
	state := shownState(doc)
	for _, want := range []string{"Status: Set 20", "by owner@example.com", "Secret: Access token, not shown", "API budget: at most 30%"} {
		if !strings.Contains(state, want) {
			t.Errorf("state %q lacks %q", state, want)
		}
	}
	if strings.Contains(state, "Private addresses") {
		t.Errorf("the console allowed private addresses: %q", state)
	}
	if doc.Find("#api-credentials form.api-credentials-clear button").Text() != "Clear API credentials" ||
		!strings.Contains(doc.Find("#api-credentials form.api-credentials-set button").Text(), "Replace API credentials") {
		t.Errorf("owner's buttons once set: %q", doc.Find("#api-credentials button").Text())
	}
	if strings.Contains(pageHTML(doc), consoleToken) {
		t.Fatal("the page shows the token")
	}
	if c, ok := stored(t, e, "hub"); !ok || c.Token != consoleToken || c.BudgetShare != 0.3 || c.AllowPrivate {
		t.Fatalf("stored %v, token kept %v, budget %v, allow private %v", ok, c.Token == consoleToken, c.BudgetShare, c.AllowPrivate)
	}

	if status, _, loc = b.Post("/t/acme/providers/hub/api-credentials/clear", nil); status != http.StatusSeeOther {
		t.Fatalf("clear: %d", status)
	}
	_, doc = b.Get(loc)
	if got := webtest.ShownFlash(doc); !strings.HasPrefix(got, "Cleared the API credentials") ||
		!strings.Contains(shownState(doc), "Not set") {
		t.Errorf("after clear: flash %q, state %q", got, shownState(doc))
	}
	if _, ok := stored(t, e, "hub"); ok {
		t.Fatal("still stored after clear")
	}
	_, _, loc = b.Post("/t/acme/providers/hub/api-credentials/clear", nil)
	if _, doc = b.Get(loc); webtest.ShownFlash(doc) != "Nothing to clear: provider hub has no API credentials to clear." {
		t.Errorf("second clear: %q", webtest.ShownFlash(doc))
	}

	entries, _, err := e.Store.AuditLog(context.Background(), domain.AuditQuery{TenantID: e.Tenant("acme").ID}, domain.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if strings.HasPrefix(en.Action, "api_credentials_") {
			got = append(got, en.Actor+" "+en.Action+" "+en.Target+": "+en.Summary)
		}
	}
	if want := "owner@example.com api_credentials_clear hub: cleared the access token\n" +
		"owner@example.com api_credentials_set hub: access token; at most 30% of the API budget"; strings.Join(got, "\n") != want {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	_, doc = b.Get("/t/acme/audit")
	if !strings.Contains(doc.Text(), "set the API credentials of a provider") || strings.Contains(pageHTML(doc), consoleToken) {
		t.Errorf("the audit page does not say what was done, or shows the token")
	}
	if !strings.Contains(log.String(), "provider API credentials set") || strings.Contains(log.String(), consoleToken) {
		t.Errorf("log without the change, or with the token:\n%s", log)
	}
}

// TestAPICredentialsFormRefusals: a refused Salesforce form comes back as
// entered with what is wrong, never with the secret; the console refuses a
// private login URL whatever the form says; a kind without an API has no
// section and nothing to set.
func TestAPICredentialsFormRefusals(t *testing.T) {
	t.Parallel()
	e, b, log := apiSetup(t)
	_, doc := b.Get("/t/acme/providers/sf")
	if got := strings.Join(inputNames(doc.Find("#api-credentials form.api-credentials-set")), " "); got != "client_id client_secret login_url api_version budget" {
		t.Fatalf("salesforce's form fields %q", got)
	}
	form := url.Values{"client_id": {"3MVG9abc"}, "client_secret": {consoleSecret}, "login_url": {"https://10.0.0.8"},
		"api_version": {"v61.0"}, "budget": {"50"}, "allow_private": {"true"}}
	for _, tc := range []struct {
		name string
		edit func(url.Values)
		want string
	}{
		{"a private login URL", func(url.Values) {}, "login URL: host 10.0.0.8 is a private address"},
		{"a loopback login URL over http", func(f url.Values) { f.Set("login_url", "http://127.0.0.1:9") }, "login URL must use https"},
		{"no client secret", func(f url.Values) { f.Set("login_url", "https://203.0.113.5"); f.Del("client_secret") }, "the client secret is required"},
		{"a budget that is not a number", func(f url.Values) { f.Set("budget", "half") }, "the API budget must be a percentage"},
		{"a budget out of bounds", func(f url.Values) { f.Set("budget", "0") }, "above 0% and at most 100%"},
		{"a token", func(f url.Values) { f.Set("login_url", "https://203.0.113.5"); f.Set("token", consoleToken) }, "take no access token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := url.Values{}
			for k, v := range form {
				f[k] = append([]string(nil), v...)
			}
			tc.edit(f)
			status, doc, _ := b.Post("/t/acme/providers/sf/api-credentials", f)
			section := doc.Find("#api-credentials")
			if status != http.StatusUnprocessableEntity || !strings.Contains(webtest.Text(doc, "#api-credentials [role=alert]"), tc.want) {
				t.Fatalf("%d %q, want 422 with %q", status, webtest.Text(doc, "#api-credentials [role=alert]"), tc.want)
			}
			if section.Find("input[name=client_id]").AttrOr("value", "") != "3MVG9abc" || section.Find("input[name=api_version]").AttrOr("value", "") != "v61.0" ||
				section.Find("input[name=client_secret]").AttrOr("value", "x") != "" || strings.Contains(pageHTML(doc), consoleSecret) {
				t.Fatalf("refused form not as entered, or with the secret")
			}
		})
	}
	if _, ok := stored(t, e, "sf"); ok {
		t.Fatal("a refused form stored credentials")
	}
	form.Set("login_url", "https://203.0.113.5")
	if status, _, _ := b.Post("/t/acme/providers/sf/api-credentials", form); status != http.StatusSeeOther {
		t.Fatalf("a public login URL: %d", status)
	}
	_, doc = b.Get("/t/acme/providers/sf")
	state := shownState(doc)
	for _, want := range []string{"Secret: Client secret, not shown", "Client ID: 3MVG9abc", "Login URL: https://203.0.113.5",
		"API version: v61.0", "API budget: at most 50%"} {
		if !strings.Contains(state, want) {
			t.Errorf("state %q lacks %q", state, want)
		}
	}
	if doc.Find("#api-credentials input[name=client_id]").AttrOr("value", "") != "3MVG9abc" || strings.Contains(pageHTML(doc), consoleSecret) {
		t.Errorf("the form is not filled with what may be shown, or shows the secret")
	}
	if strings.Contains(log.String(), consoleSecret) || strings.Contains(log.String(), consoleToken) {
		t.Errorf("the log holds a secret:\n%s", log)
	}

	// A standard provider has no API: no section, nothing to set.
	_, doc = b.Get("/t/acme/providers/crm")
	if doc.Find("#api-credentials").Length() != 0 {
		t.Error("a standard provider's page has an API credentials section")
	}
	_, _, loc := b.Post("/t/acme/providers/crm/api-credentials", url.Values{"token": {consoleToken}, "budget": {"50"}})
	if _, doc = b.Get(loc); !strings.Contains(webtest.ShownFlash(doc), "provider kind standard has no API to pull from") {
		t.Errorf("setting a standard provider's: %q", webtest.ShownFlash(doc))
	}
}

// TestAPICredentialsReadOnlyBelowOwner: operators and viewers see whether
// the credentials are set and what may be shown of them, but no form, and
// their posts are refused, changing nothing.
func TestAPICredentialsReadOnlyBelowOwner(t *testing.T) {
	t.Parallel()
	e, _, _ := apiSetup(t)
	hub, err := e.Store.ProviderSummary(context.Background(), e.Tenant("acme").ID, "hub")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAPICredentials(webtest.CliContext(), e.Tenant("acme").ID, hub.ID, pull.Credentials{Token: consoleToken, BudgetShare: 0.5}); err != nil {
		t.Fatal(err)
	}
	for _, role := range []domain.Role{domain.RoleViewer, domain.RoleOperator} {
		t.Run(string(role), func(t *testing.T) {
			email := string(role) + "@example.com"
			e.Member(email, false, role, "acme")
			b := e.SignIn(email)
			_, doc := b.Get("/t/acme/providers/hub")
			if state := shownState(doc); !strings.Contains(state, "by test") || !strings.Contains(state, "Secret: Access token, not shown") {
				t.Errorf("state %q", state)
			}
			if n := doc.Find("#api-credentials form").Length(); n != 0 || strings.Contains(pageHTML(doc), consoleToken) {
				t.Errorf("%d forms, or the token, on the page", n)
			}
			if status, _, _ := b.Post("/t/acme/providers/hub/api-credentials", url.Values{"token": {"pat-na1-mine"}, "budget": {"50"}}); status != http.StatusForbidden {
				t.Errorf("set: %d, want 403", status)
			}
			if status, _, _ := b.Post("/t/acme/providers/hub/api-credentials/clear", nil); status != http.StatusForbidden {
				t.Errorf("clear: %d, want 403", status)
			}
			if c, ok := stored(t, e, "hub"); !ok || c.Token != consoleToken {
				t.Errorf("the credentials changed")
			}
		})
	}
}
