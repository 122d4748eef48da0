package admin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestAdminAppsPages: the admin area lists the apps with their installs
// and shows one app with its webhook URL, its installs (a needs_reconnect
// one marked) and its unrouted portals, their sample escaped.
func TestAdminAppsPages(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	app, err := e.Store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "crm-sync", ProviderAppID: 4242,
		ClientID: "client-1", ClientSecret: "client-secret-0123456789", Scopes: []string{"oauth", "crm.objects.contacts.read"}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.Store.InstallByOAuth(ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: e.Tenant("acme").ID, PortalID: 101,
		ProviderName: "hub", NewSecret: "hubspot-client-secret-0123456789",
		Tokens: domain.AppTokens{AccessToken: "a", RefreshToken: "r", Expiry: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.MarkNeedsReconnect(ctx, in.TenantID, in.ID, "refused"); err != nil {
		t.Fatal(err)
	}
	sample := []byte(`[{"portalId":999,"note":"</pre><script>alert(1)</script>"}]`)
	if err := e.Store.CountUnrouted(ctx, app.ID, time.Now(), []domain.UnroutedPortal{{PortalID: 999, N: 3, Sample: sample}}); err != nil {
		t.Fatal(err)
	}
	admin := e.Operator("root@example.com", true)

	status, doc := admin.Get("/admin")
	if status != http.StatusOK || doc.Find(`.admin-home-apps a[href="/admin/apps"]`).Length() != 1 ||
		webtest.Text(doc, ".admin-home-apps .stat") != "1" {
		t.Fatalf("admin home: %d, apps card %q", status, webtest.Text(doc, ".admin-home-apps"))
	}
	status, doc = admin.Get("/admin/apps")
	if status != http.StatusOK || webtest.Text(doc, "header a.active") != "Apps" {
		t.Fatalf("apps page: %d, nav %q", status, webtest.Text(doc, "header a.active"))
	}
	if row := webtest.Text(doc, `tr[data-app="crm-sync"] .app-installs`); row != "1 1 need reconnect" {
		t.Errorf("installs of crm-sync %q", row)
	}
	status, doc = admin.Get("/admin/apps/crm-sync")
	if status != http.StatusOK {
		t.Fatalf("app page: %d", status)
	}
	if u := webtest.Text(doc, "#app-webhook-url"); !strings.HasSuffix(u, "/webhooks/apps/crm-sync") {
		t.Errorf("webhook URL %q", u)
	}
	install := doc.Find(`tr.app-install[data-portal="101"]`)
	if href, _ := install.Find(`a[href="/t/acme/providers/hub"]`).Attr("href"); href == "" ||
		install.Find(".install-status .install-needs-reconnect").Length() != 1 ||
		strings.TrimSpace(install.Find(".install-tokens").Text()) != "yes" {
		t.Errorf("install row %q", strings.Join(strings.Fields(install.Text()), " "))
	}
	unrouted := doc.Find(`tr.app-unrouted-portal[data-portal="999"]`)
	if unrouted.Length() != 1 || !strings.Contains(unrouted.Text(), "3") ||
		!strings.Contains(unrouted.Find("details.unrouted-sample pre").Text(), "<script>alert(1)</script>") ||
		doc.Find("details.unrouted-sample script").Length() != 0 {
		t.Errorf("unrouted row %q", strings.Join(strings.Fields(unrouted.Text()), " "))
	}
	if status, _ := admin.Get("/admin/apps/nope"); status != http.StatusNotFound {
		t.Errorf("an unknown app: %d, want 404", status)
	}
}
