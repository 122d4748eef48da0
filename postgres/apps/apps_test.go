package apps_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

const (
	clientSecret = "3f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
	nextSecret   = "9a8b7c6d-5e4f-3a2b-1c0d-ffeeddccbbaa"
)

// fixture is a store with tenants acme and globex, each with a HubSpot
// provider named hub (acme also a standard one, crm), and the CLI as the
// actor.
type fixture struct {
	s                *postgres.Store
	ctx              context.Context
	acme, globex     int64
	acmeHub, acmeCRM int64
	globexHub        int64
}

func setup(t *testing.T) fixture {
	t.Helper()
	s, err := postgres.New(testdb.New(t), pgtest.Key)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{s: s, ctx: pgtest.AsCLI(context.Background())}
	tenant := func(slug string) int64 {
		tn, err := s.CreateTenant(f.ctx, slug, "")
		if err != nil {
			t.Fatal(err)
		}
		return tn.ID
	}
	connect := func(tenant int64, name, kind string) int64 {
		p, err := s.ConnectProvider(f.ctx, tenant, name, kind, "hubspot-client-secret-0123456789", nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	f.acme, f.globex = tenant("acme"), tenant("globex")
	f.acmeHub, f.acmeCRM = connect(f.acme, "hub", domain.AppKindHubSpot), connect(f.acme, "crm", "standard")
	f.globexHub = connect(f.globex, "hub", domain.AppKindHubSpot)
	return f
}

func (f fixture) createApp(t *testing.T, name string) domain.App {
	t.Helper()
	app, err := f.s.CreateApp(f.ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: name, ProviderAppID: 4242,
		ClientID: "client-" + name, ClientSecret: clientSecret, Scopes: []string{"oauth", "crm.objects.contacts.read", "oauth"}})
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// auditActions are the actions recorded for tenantID (0: outside any
// tenant), oldest first, as "action target: summary".
func (f fixture) audit(t *testing.T, tenantID int64) []string {
	t.Helper()
	entries, _, err := f.s.AuditLog(f.ctx, domain.AuditQuery{TenantID: tenantID}, domain.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range slices.Backward(entries) {
		if strings.HasPrefix(e.Action, "app_") {
			out = append(out, e.Action+" "+e.Target+": "+e.Summary)
		}
	}
	return out
}

// TestApps: an app is created with HubSpot's defaults, listed, read by
// name, refused twice under one name or with a bad form; its secret is
// sealed, never plaintext in the database; a rotation keeps the previous
// secret verifying for the grace and drops the one before; deleting it
// removes its secrets and installs. Each change is audited outside any
// tenant.
func TestApps(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "tidemark-hub")
	if app.AuthorizeURL != domain.DefaultHubSpotAuthorizeURL || app.APIBaseURL != domain.DefaultHubSpotAPIBaseURL ||
		!slices.Equal(app.Scopes, []string{"crm.objects.contacts.read", "oauth"}) || app.ProviderAppID != 4242 || !app.RotatedAt.IsZero() {
		t.Fatalf("created %+v", app)
	}
	f.createApp(t, "another")
	if _, err := f.s.CreateApp(f.ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "another", ProviderAppID: 1,
		ClientID: "x", ClientSecret: clientSecret}); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("a second app named another: %v, want ECONFLICT", err)
	}
	for _, bad := range []domain.NewApp{
		{Kind: "salesforce", Name: "x", ProviderAppID: 1, ClientID: "x", ClientSecret: clientSecret},
		{Kind: domain.AppKindHubSpot, Name: "Bad Name", ProviderAppID: 1, ClientID: "x", ClientSecret: clientSecret},
		{Kind: domain.AppKindHubSpot, Name: "x", ProviderAppID: 1, ClientID: "x", ClientSecret: "short"},
		{Kind: domain.AppKindHubSpot, Name: "x", ProviderAppID: 1, ClientID: "x", ClientSecret: clientSecret, APIBaseURL: "http://api.example"},
	} {
		if _, err := f.s.CreateApp(f.ctx, bad); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", bad, err)
		}
	}
	list, err := f.s.Apps(f.ctx)
	if err != nil || len(list) != 2 || list[0].Name != "another" || list[1].Name != "tidemark-hub" {
		t.Fatalf("apps: %+v, %v", list, err)
	}
	if got, err := f.s.App(f.ctx, "tidemark-hub"); err != nil || got.ID != app.ID || got.ClientID != "client-tidemark-hub" {
		t.Fatalf("app by name: %+v, %v", got, err)
	}
	if _, err := f.s.App(f.ctx, "nothing"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("an unknown app: %v, want ENOTFOUND", err)
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM app_secrets WHERE position(convert_to('`+clientSecret+`', 'UTF8') in ciphertext) > 0`); n != 0 {
		t.Fatalf("%d app secrets hold the secret in plaintext", n)
	}

	secrets := func() []string {
		t.Helper()
		got, err := f.s.AppSecrets(f.ctx, app.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := secrets(); !slices.Equal(got, []string{clientSecret}) {
		t.Fatalf("secrets before a rotation: %d of them", len(got))
	}
	rotated, err := f.s.RotateAppSecret(f.ctx, "tidemark-hub", nextSecret)
	if err != nil || rotated.RotatedAt.IsZero() {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	if got := secrets(); !slices.Equal(got, []string{nextSecret, clientSecret}) {
		t.Fatal("after a rotation, the new secret and the previous one (in its grace) should verify, the new first")
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM app_secrets
		WHERE expires_at BETWEEN now() + interval '23 hours 59 minutes' AND now() + interval '24 hours'`); n != 1 {
		t.Fatalf("%d secrets expire in the grace of 24h, want the previous one", n)
	}
	if _, err := f.s.RotateAppSecret(f.ctx, "tidemark-hub", "third-secret-0123456789"); err != nil {
		t.Fatal(err)
	}
	if got := secrets(); !slices.Equal(got, []string{"third-secret-0123456789", nextSecret}) {
		t.Fatal("a second rotation should end the first secret at once")
	}
	if _, err := f.s.RotateAppSecret(f.ctx, "tidemark-hub", "has space in it"); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("a secret with spaces: %v, want EINVALID", err)
	}
	if _, err := f.s.RotateAppSecret(f.ctx, "nothing", nextSecret); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("rotate an unknown app: %v, want ENOTFOUND", err)
	}

	if _, err := f.s.ConnectPortal(f.ctx, "tidemark-hub", 1001, f.acme, f.acmeHub); err != nil {
		t.Fatal(err)
	}
	if err := f.s.DeleteApp(f.ctx, "tidemark-hub"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.App(f.ctx, "tidemark-hub"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("a deleted app: %v, want ENOTFOUND", err)
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT (SELECT count(*) FROM app_secrets) + (SELECT count(*) FROM app_installs)`); n != 1 {
		t.Fatalf("%d secrets and installs left, want another's secret alone", n)
	}
	if err := f.s.DeleteApp(f.ctx, "tidemark-hub"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("delete twice: %v, want ENOTFOUND", err)
	}
	want := []string{
		`app_create tidemark-hub: hubspot app 4242, client id client-tidemark-hub, scopes "crm.objects.contacts.read oauth", ` +
			`authorize URL https://app.hubspot.com/oauth/authorize, API base URL https://api.hubapi.com`,
		`app_create another: hubspot app 4242, client id client-another, scopes "crm.objects.contacts.read oauth", ` +
			`authorize URL https://app.hubspot.com/oauth/authorize, API base URL https://api.hubapi.com`,
		"app_rotate tidemark-hub: rotated the client secret; the previous one verifies for 24h more",
		"app_rotate tidemark-hub: rotated the client secret; the previous one verifies for 24h more",
		"app_delete tidemark-hub: deleted with its secrets and 1 installs",
	}
	if got := f.audit(t, 0); !slices.Equal(got, want) {
		t.Fatalf("audit outside tenants:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := f.audit(t, f.acme); len(got) != 2 || !strings.HasPrefix(got[1], "app_disconnect tidemark-hub portal 1001: app deleted") {
		t.Fatalf("acme's audit: %q", got)
	}
}

// TestInstalls: a portal is mapped by hand to a tenant's HubSpot provider,
// found by the app endpoint's lookup, listed; mapping it again is a no-op;
// mapping it for another tenant is refused naming the tenant; a provider
// of another kind or of another tenant is refused; a disconnect removes
// it; deleting a tenant removes its installs. Each change is audited in
// the tenant's log.
func TestInstalls(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "hub-app")

	in, err := f.s.ConnectPortal(f.ctx, "hub-app", 1001, f.acme, f.acmeHub)
	if err != nil {
		t.Fatal(err)
	}
	want := domain.AppInstall{ID: in.ID, AppID: app.ID, AppName: "hub-app", PortalID: 1001, TenantID: f.acme, TenantSlug: "acme",
		ProviderID: f.acmeHub, ProviderName: "hub", Status: domain.InstallActive, CreatedAt: in.CreatedAt}
	if in != want || in.CreatedAt.IsZero() {
		t.Fatalf("connected %+v, want %+v", in, want)
	}
	if again, err := f.s.ConnectPortal(f.ctx, "hub-app", 1001, f.acme, f.acmeHub); err != nil || again != in {
		t.Fatalf("connect again: %+v, %v; want the install as it was", again, err)
	}
	if got, err := f.s.PortalInstall(f.ctx, app.ID, 1001); err != nil || got != in {
		t.Fatalf("portal install: %+v, %v", got, err)
	}
	if _, err := f.s.PortalInstall(f.ctx, app.ID, 2002); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("a portal not installed: %v, want ENOTFOUND", err)
	}

	_, err = f.s.ConnectPortal(f.ctx, "hub-app", 1001, f.globex, f.globexHub)
	if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(err.Error(), "installed for tenant acme (provider hub)") {
		t.Fatalf("the portal for another tenant: %v, want ECONFLICT naming acme", err)
	}
	if _, err := f.s.ConnectPortal(f.ctx, "hub-app", 3003, f.acme, f.acmeHub); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("a second portal for the same provider: %v, want ECONFLICT", err)
	}
	if _, err := f.s.ConnectPortal(f.ctx, "hub-app", 3003, f.acme, f.acmeCRM); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("a standard provider: %v, want EINVALID", err)
	}
	if _, err := f.s.ConnectPortal(f.ctx, "hub-app", 3003, f.acme, f.globexHub); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("another tenant's provider: %v, want ENOTFOUND", err)
	}
	if _, err := f.s.ConnectPortal(f.ctx, "hub-app", 0, f.acme, f.acmeHub); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("portal 0: %v, want EINVALID", err)
	}
	if _, err := f.s.ConnectPortal(f.ctx, "nothing", 3003, f.acme, f.acmeHub); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("an unknown app: %v, want ENOTFOUND", err)
	}
	g, err := f.s.ConnectPortal(f.ctx, "hub-app", 2002, f.globex, f.globexHub)
	if err != nil {
		t.Fatal(err)
	}
	list, err := f.s.AppInstalls(f.ctx, "hub-app")
	if err != nil || len(list) != 2 || list[0] != in || list[1] != g {
		t.Fatalf("installs: %+v, %v", list, err)
	}

	out, err := f.s.DisconnectPortal(f.ctx, "hub-app", 1001)
	if err != nil || out != in {
		t.Fatalf("disconnect: %+v, %v", out, err)
	}
	if _, err := f.s.DisconnectPortal(f.ctx, "hub-app", 1001); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("disconnect twice: %v, want ENOTFOUND", err)
	}
	// Now globex may have the portal.
	if _, err := f.s.ConnectPortal(f.ctx, "hub-app", 1001, f.globex, f.globexHub); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("a second portal for globex's provider: %v, want ECONFLICT", err)
	}
	wantAudit := []string{
		"app_connect hub-app portal 1001: portal mapped to provider hub by hand, without tokens: webhooks only",
		"app_disconnect hub-app portal 1001: portal's mapping removed; provider hub kept",
	}
	if got := f.audit(t, f.acme); !slices.Equal(got, wantAudit) {
		t.Fatalf("acme's audit: %q, want %q", got, wantAudit)
	}

	// A tenant deleted takes its installs; the other tenant's stay.
	if _, err := f.s.Pool().Exec(f.ctx, `DELETE FROM tenants WHERE id = $1`, f.globex); err != nil {
		t.Fatal(err)
	}
	if list, err := f.s.AppInstalls(f.ctx, "hub-app"); err != nil || len(list) != 0 {
		t.Fatalf("installs after globex was deleted: %+v, %v", list, err)
	}
	if _, err := f.s.PortalInstall(f.ctx, app.ID, 2002); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("globex's portal after its tenant was deleted: %v, want ENOTFOUND", err)
	}
}
