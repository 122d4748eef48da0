package providers_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReconnectBanner: an install whose tokens HubSpot refused to renew is
// a banner on the Providers page and on its provider's page, with the
// Connect HubSpot action for owners; installing again clears it.
func TestReconnectBanner(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	app, err := e.Store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "crm-sync", ProviderAppID: 4242,
		ClientID: "client-1", ClientSecret: "client-secret-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	install := domain.AppOAuthInstall{AppID: app.ID, TenantID: e.Tenant("acme").ID, PortalID: 101,
		ProviderName: "hub", NewSecret: "hubspot-client-secret-0123456789",
		Tokens: domain.AppTokens{AccessToken: "a", RefreshToken: "r", Expiry: time.Now().Add(time.Hour)}}
	in, err := e.Store.InstallByOAuth(ctx, install)
	if err != nil {
		t.Fatal(err)
	}
	owner := e.WithRole("owner@example.com", domain.RoleOwner)
	viewer := e.WithRole("viewer@example.com", domain.RoleViewer)
	banner := "HubSpot refused to renew the tokens of portal 101 (app crm-sync): install the app again"
	for _, path := range []string{"/t/acme/providers", "/t/acme/providers/hub"} {
		if _, doc := owner.Get(path); doc.Find(".install-reconnect").Length() != 0 {
			t.Fatalf("%s shows a banner while the install is active", path)
		}
	}
	if err := e.Store.MarkNeedsReconnect(ctx, in.TenantID, in.ID, "refused"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/t/acme/providers", "/t/acme/providers/hub"} {
		status, doc := owner.Get(path)
		b := doc.Find(`.install-reconnect[role=alert][data-portal="101"]`)
		if status != http.StatusOK || !strings.Contains(strings.Join(strings.Fields(b.Text()), " "), banner) {
			t.Fatalf("%s: %d, banner %q", path, status, b.Text())
		}
		form := b.Find(`form[action="/t/acme/apps/crm-sync/connect"]`)
		if v, _ := form.Find(`input[name=provider]`).Attr("value"); v != "hub" || form.Find("button").Text() != "Connect HubSpot" {
			t.Errorf("%s: the owner's Connect HubSpot action %q, provider %q", path, form.Text(), v)
		}
		_, doc = viewer.Get(path)
		if b := doc.Find(".install-reconnect"); !strings.Contains(b.Text(), "portal 101") || b.Find("form").Length() != 0 {
			t.Errorf("%s by a viewer: banner %q, want it without the owners' action", path, b.Text())
		}
	}
	if _, doc := owner.Get("/t/acme/providers/crm"); doc.Find(".install-reconnect").Length() != 0 {
		t.Error("another provider's page shows the banner")
	}
	// Installed again by OAuth: active, no banner.
	if _, err := e.Store.InstallByOAuth(ctx, install); err != nil {
		t.Fatal(err)
	}
	if _, doc := owner.Get("/t/acme/providers/hub"); doc.Find(".install-reconnect").Length() != 0 {
		t.Error("the banner stays after installing again")
	}
}
