package apps_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// The OAuth install of a HubSpot app against hubspottest's fake consent,
// token and token-info endpoints
// (https://developers.hubspot.com/docs/api/oauth-quickstart-guide,
// https://developers.hubspot.com/docs/api/oauth/tokens).

const portal = 62515

type fixture struct {
	e    *webtest.Env
	hs   *hubspottest.Server
	app  domain.App
	logs *webtest.LogBuffer
}

func setup(t *testing.T) fixture {
	t.Helper()
	e, logs := webtest.SetupLogged(t, postgres.DefaultReadTimeout)
	hs := hubspottest.New(t)
	hs.SetConsentPortal(portal)
	fa := hs.App()
	app, err := e.Store.CreateApp(webtest.CliContext(), domain.NewApp{Kind: domain.AppKindHubSpot, Name: "tidemark-hub",
		ProviderAppID: fa.ID, ClientID: fa.ClientID, ClientSecret: fa.ClientSecret,
		Scopes:       []string{"oauth", "crm.objects.contacts.read"},
		AuthorizeURL: hs.AuthorizeURL(), APIBaseURL: hs.URL(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Tenant("globex")
	return fixture{e: e, hs: hs, app: app, logs: logs}
}

// connect starts an install as b and returns the authorize URL it is sent to.
func (f fixture) connect(t *testing.T, b *webtest.Browser, tenant, provider string) *url.URL {
	t.Helper()
	status, loc := b.RedirectOf("/t/" + tenant + "/apps/tidemark-hub/connect?provider=" + provider)
	if status != http.StatusFound {
		t.Fatalf("connect answered %d to %q", status, loc)
	}
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// consent follows the authorize URL on the fake's consent page, which
// approves at once, and returns the callback path (with its query) it
// sends the browser back to.
func (f fixture) consent(t *testing.T, authorize *url.URL) string {
	t.Helper()
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		Get(authorize.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(back.String(), f.e.Srv.URL+"/") {
		t.Fatalf("consent answered %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return back.RequestURI()
}

// refused checks that path answers the 400 page with reason in it.
func refused(t *testing.T, b *webtest.Browser, path, reason string) {
	t.Helper()
	status, doc := b.Get(path)
	if got := webtest.Text(doc, "#install-refusal"); status != http.StatusBadRequest || !strings.Contains(got, reason) {
		t.Fatalf("%d %q, want 400 saying %q", status, got, reason)
	}
}

func (f fixture) installs(t *testing.T) []domain.AppInstall {
	t.Helper()
	list, err := f.e.Store.AppInstalls(t.Context(), "tidemark-hub")
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestInstallEndToEnd: the Providers page offers owners "Connect HubSpot";
// connect sends the browser to the consent page with the app's client id,
// the callback URL, its scopes and a state; the callback exchanges the
// code, reads the portal, creates the provider, maps the portal with its
// tokens sealed, audits it and lands on the provider's page. The state
// works once.
func TestInstallEndToEnd(t *testing.T) {
	t.Parallel()
	f := setup(t)
	b := f.e.Operator("owner@example.com", false, "acme")

	status, doc := b.Get("/t/acme/providers")
	form := doc.Find(`form.app-connect-form[data-app="tidemark-hub"]`)
	if action, _ := form.Attr("action"); status != http.StatusOK || action != "/t/acme/apps/tidemark-hub/connect" ||
		form.Find(`input[name="provider"][value="hubspot"]`).Length() != 1 {
		t.Fatalf("providers page %d: connect form action %q", status, action)
	}
	// The consent page is reached by the form's redirect, which form-action must allow.
	req, _ := http.NewRequest(http.MethodGet, f.e.Srv.URL+"/t/acme/providers", nil)
	resp, err := b.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+f.hs.URL()) {
		t.Fatalf("the providers page's CSP does not let its form reach the consent page: %q", csp)
	}

	authorize := f.connect(t, b, "acme", "hubspot")
	q := authorize.Query()
	if got := authorize.Scheme + "://" + authorize.Host + authorize.Path; got != f.hs.AuthorizeURL() ||
		q.Get("client_id") != f.hs.App().ClientID || q.Get("redirect_uri") != f.e.Srv.URL+"/apps/tidemark-hub/oauth/callback" ||
		q.Get("scope") != "crm.objects.contacts.read oauth" || len(q.Get("state")) < 22 {
		t.Fatalf("authorize URL %s", authorize)
	}
	callback := f.consent(t, authorize)
	if !strings.HasPrefix(callback, "/apps/tidemark-hub/oauth/callback?") {
		t.Fatalf("consent sent back to %s", callback)
	}
	status, loc := b.RedirectOf(callback)
	if status != http.StatusSeeOther || loc != "/t/acme/providers/hubspot" {
		t.Fatalf("callback answered %d to %q", status, loc)
	}
	status, doc = b.Get(loc)
	if status != http.StatusOK || !strings.Contains(webtest.ShownFlash(doc), "HubSpot portal 62515 is installed") {
		t.Fatalf("provider page %d, flash %q", status, webtest.ShownFlash(doc))
	}
	list := f.installs(t)
	if len(list) != 1 || list[0].PortalID != portal || list[0].TenantSlug != "acme" || list[0].ProviderName != "hubspot" ||
		!list[0].HasTokens || list[0].Status != domain.InstallActive {
		t.Fatalf("installs %+v", list)
	}
	tokens, err := f.e.Store.InstallTokens(t.Context(), list[0].TenantID, list[0].ID)
	if err != nil || tokens.AccessToken == "" || !strings.HasPrefix(tokens.RefreshToken, "na1-") {
		t.Fatalf("install tokens: %v", err)
	}
	var plain int
	if err := f.e.Store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM app_installs
		WHERE position(convert_to($1, 'UTF8') in tokens_ciphertext) > 0 OR position(convert_to($2, 'UTF8') in tokens_ciphertext) > 0`,
		tokens.AccessToken, tokens.RefreshToken).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("%d installs hold a token in plaintext (%v)", plain, err)
	}
	if audit := f.e.AuditLog("acme"); !slices.ContainsFunc(audit, func(s string) bool {
		return strings.Contains(s, "app_install") && strings.Contains(s, "tidemark-hub portal 62515")
	}) {
		t.Fatalf("no app_install in acme's audit: %q", audit)
	}

	// The same state again: refused, nothing changed.
	refused(t, b, callback, "used already")
	if len(f.installs(t)) != 1 {
		t.Fatal("a reused state changed the installs")
	}
	back, _ := url.Parse(callback)
	for what, secret := range map[string]string{"state": q.Get("state"), "code": back.Query().Get("code"),
		"access token": tokens.AccessToken, "refresh token": tokens.RefreshToken} {
		if strings.Contains(f.logs.String(), secret) {
			t.Errorf("the log holds the %s", what)
		}
	}
	if !strings.Contains(f.logs.String(), "app installed by OAuth") {
		t.Error("the install was not logged")
	}
}

// TestInstallRefusals: an expired state, another operator's state, a state
// from another session, an operator no longer owner of the tenant, a
// portal installed for another tenant and access_denied are each a 400
// page that installs nothing; only an admin is told the other tenant.
func TestInstallRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	owner := f.e.Operator("owner@example.com", false, "acme", "globex")
	other := f.e.Operator("other@example.com", false, "acme")

	// Expired.
	callback := f.consent(t, f.connect(t, owner, "acme", "hubspot"))
	f.e.Exec(`UPDATE app_oauth_states SET created_at = now() - interval '11 minutes'`)
	refused(t, owner, callback, "expired")

	// Another operator's state, then (the state gone) its owner's.
	callback = f.consent(t, f.connect(t, owner, "acme", "hubspot"))
	refused(t, other, callback, "started by another operator")
	refused(t, owner, callback, "used already")

	// The same operator in another browser session.
	callback = f.consent(t, f.connect(t, owner, "acme", "hubspot"))
	refused(t, f.e.SignIn("owner@example.com"), callback, "another browser session")

	// An owner of acme and globex starts an install into globex, then is
	// removed from globex: they cannot finish it there.
	callback = f.consent(t, f.connect(t, owner, "globex", "hubspot"))
	if _, err := f.e.Store.RemoveMembership(webtest.CliContext(), f.e.OperatorID("owner@example.com"), "globex"); err != nil {
		t.Fatal(err)
	}
	refused(t, owner, callback, "no longer an owner")
	// And another tenant's connect is not theirs to start.
	if status, _ := owner.RedirectOf("/t/globex/apps/tidemark-hub/connect"); status != http.StatusNotFound {
		t.Fatalf("connect into a tenant of another: %d, want 404", status)
	}

	// HubSpot's consent page refused.
	authorize := f.connect(t, owner, "acme", "hubspot")
	refused(t, owner, "/apps/tidemark-hub/oauth/callback?error=access_denied&state="+url.QueryEscape(authorize.Query().Get("state")),
		"not approved")
	if len(f.installs(t)) != 0 {
		t.Fatalf("refused installs changed the installs: %+v", f.installs(t))
	}

	// The portal installed for globex (by an admin, by hand) is refused to
	// acme's owner without naming globex; an admin is told.
	globexHub, err := f.e.Store.ConnectProvider(webtest.CliContext(), f.e.Tenant("globex").ID, "hub", domain.AppKindHubSpot,
		"hubspot-client-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Store.ConnectPortal(webtest.CliContext(), "tidemark-hub", portal, globexHub.TenantID, globexHub.ID); err != nil {
		t.Fatal(err)
	}
	status, doc := owner.Get(f.consent(t, f.connect(t, owner, "acme", "hubspot")))
	if got := webtest.Text(doc, "#install-refusal"); status != http.StatusBadRequest || !strings.Contains(got, "installed elsewhere") ||
		strings.Contains(got, "globex") {
		t.Fatalf("portal of globex for acme's owner: %d %q", status, got)
	}
	admin := f.e.Operator("admin@example.com", true)
	status, doc = admin.Get(f.consent(t, f.connect(t, admin, "acme", "hubspot")))
	if got := webtest.Text(doc, "#install-refusal"); status != http.StatusBadRequest || !strings.Contains(got, "tenant globex") {
		t.Fatalf("portal of globex for an admin: %d %q", status, got)
	}
	if list := f.installs(t); len(list) != 1 || list[0].TenantSlug != "globex" || list[0].HasTokens {
		t.Fatalf("installs after refusals: %+v", list)
	}
	if _, err := f.e.Store.ProviderSummary(t.Context(), f.e.Tenant("acme").ID, "hubspot"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("acme's hubspot provider after refused installs: %v, want none", err)
	}
}
