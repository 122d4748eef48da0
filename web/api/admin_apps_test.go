package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// adminSetup is a server with app "crm-sync" (portal 101 installed for
// acme/hub, portal 999 sending events unrouted), admin root@example.com
// and an admin token answering for them.
func adminSetup(t *testing.T) (*webtest.Env, string) {
	t.Helper()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	if err := e.Store.CreateUser(ctx, "root@example.com", "a long enough password", true, "", ""); err != nil {
		t.Fatal(err)
	}
	app, err := e.Store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "crm-sync", ProviderAppID: 4242,
		ClientID: "client-1", ClientSecret: "client-secret-0123456789", Scopes: []string{"oauth"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Store.ConnectProvider(ctx, e.Tenant("acme").ID, "hub", domain.AppKindHubSpot, "client-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.ConnectPortal(ctx, app.Name, 101, p.TenantID, p.ID); err != nil {
		t.Fatal(err)
	}
	sample := []byte(`[{"portalId":999,"objectId":1,"note":"<b>"}]`)
	if err := e.Store.CountUnrouted(ctx, app.ID, time.Now(), []domain.UnroutedPortal{{PortalID: 999, N: 3, Sample: sample}}); err != nil {
		t.Fatal(err)
	}
	token, err := e.Store.CreateAdminToken(ctx, domain.NewAdminToken{Name: "ops", CreatorEmail: "root@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return e, token
}

// TestAdminAPIApp: an admin token reads the app with its installs and
// unrouted portals, and the list; an unknown app is 404.
func TestAdminAPIApp(t *testing.T) {
	t.Parallel()
	e, token := adminSetup(t)
	status, body := e.Get("/api/v1/admin/apps/crm-sync", token)
	if status != http.StatusOK {
		t.Fatalf("status %d (%v)", status, body)
	}
	webtest.AssertKeys(t, body, "name", "kind", "app_id", "client_id", "scopes", "webhook_url", "created_at", "rotated_at",
		"installs", "unrouted")
	if body["app_id"] != 4242.0 || body["client_id"] != "client-1" || body["rotated_at"] != nil ||
		!strings.HasSuffix(body["webhook_url"].(string), "/webhooks/apps/crm-sync") {
		t.Errorf("app = %v", body)
	}
	installs := body["installs"].([]any)
	if len(installs) != 1 {
		t.Fatalf("installs = %v", installs)
	}
	in := installs[0].(map[string]any)
	webtest.AssertKeys(t, in, "portal_id", "tenant", "provider", "tokens", "status", "created_at")
	assertJSON(t, "install", map[string]any{"portal_id": in["portal_id"], "tenant": in["tenant"], "provider": in["provider"],
		"tokens": in["tokens"], "status": in["status"]},
		`{"portal_id":101,"tenant":"acme","provider":"hub","tokens":false,"status":"active"}`)
	unrouted := body["unrouted"].([]any)
	if len(unrouted) != 1 {
		t.Fatalf("unrouted = %v", unrouted)
	}
	u := unrouted[0].(map[string]any)
	webtest.AssertKeys(t, u, "portal_id", "count", "last_seen", "sample")
	assertJSON(t, "unrouted", map[string]any{"portal_id": u["portal_id"], "count": u["count"], "sample": u["sample"]},
		`{"portal_id":999,"count":3,"sample":[{"portalId":999,"objectId":1,"note":"<b>"}]}`)

	status, body = e.Get("/api/v1/admin/apps", token)
	apps := webtest.List(t, status, body, "apps")
	if len(apps) != 1 || apps[0]["name"] != "crm-sync" || apps[0]["install_count"] != 1.0 {
		t.Errorf("apps = %v", apps)
	}
	status, body = e.Get("/api/v1/admin/apps/nope", token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")
}

// TestAdminAPITokens: the admin API takes admin tokens alone (none or a
// bad one 401, a tenant's 403); tenant routes answer an admin token 404,
// as a token of another tenant; an admin token stops working as soon as
// its creator is no longer an admin, or is revoked.
func TestAdminAPITokens(t *testing.T) {
	t.Parallel()
	e, token := adminSetup(t)
	ctx := webtest.CliContext()
	status, body := e.Get("/api/v1/admin/apps", "")
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "missing API token")
	status, body = e.Get("/api/v1/admin/apps", token+"x")
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "invalid")
	status, body = e.Get("/api/v1/admin/apps", e.Token("acme"))
	webtest.AssertError(t, status, body, http.StatusForbidden, "admin token")
	status, body = e.Get("/api/v1/tenants/acme/stats", token)
	webtest.AssertError(t, status, body, http.StatusNotFound, "not found")

	if _, err := e.Store.CreateAdminToken(ctx, domain.NewAdminToken{Name: "x", CreatorEmail: "nobody@example.com"}); domain.ErrorCode(err) != domain.EFORBIDDEN {
		t.Errorf("a token for an unknown operator: %v, want EFORBIDDEN", err)
	}

	// A second admin demotes root: root's token no longer works, at once.
	if err := e.Store.CreateUser(ctx, "second@example.com", "a long enough password", true, "", ""); err != nil {
		t.Fatal(err)
	}
	second, err := e.Store.CreateAdminToken(ctx, domain.NewAdminToken{Name: "second", CreatorEmail: "second@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var rootID, secondID int64
	ops, err := e.Store.Operators(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		switch o.Email {
		case "root@example.com":
			rootID = o.ID
		case "second@example.com":
			secondID = o.ID
		}
	}
	if err := e.Store.SetAdmin(ctx, domain.User{ID: secondID, Email: "second@example.com", IsAdmin: true}, rootID, false); err != nil {
		t.Fatal(err)
	}
	status, body = e.Get("/api/v1/admin/apps", token)
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "no longer an admin")
	// Not even as a tenant's 404: it works nowhere.
	status, body = e.Get("/api/v1/tenants/acme/stats", token)
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "invalid")
	if status, _ := e.Get("/api/v1/admin/apps", second); status != http.StatusOK {
		t.Fatalf("second's token: %d", status)
	}
	listed, err := e.Store.AdminTokens(ctx)
	if err != nil || len(listed) != 2 || listed[0].Name != "second" || !listed[0].Works || listed[1].Works ||
		listed[1].Creator != "root@example.com" || listed[0].LastUsedAt.IsZero() {
		t.Fatalf("admin tokens = %+v, %v", listed, err)
	}
	if err := e.Store.RevokeAdminToken(ctx, listed[0].ID); err != nil {
		t.Fatal(err)
	}
	status, body = e.Get("/api/v1/admin/apps", second)
	webtest.AssertError(t, status, body, http.StatusUnauthorized, "revoked")
	if err := e.Store.RevokeAdminToken(ctx, listed[0].ID); err != nil {
		t.Errorf("revoked twice: %v", err)
	}
	if err := e.Store.RevokeAdminToken(ctx, 999999); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("unknown token: %v", err)
	}
	got := e.Strings(`SELECT action || ' ' || target FROM audit_log WHERE tenant_id = 0 AND action LIKE 'admin_token%' ORDER BY id`)
	if strings.Join(got, "|") != "admin_token_create ops|admin_token_create second|admin_token_revoke second" {
		t.Errorf("audited outside any tenant: %q", got)
	}
}
