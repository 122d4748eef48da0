package apps_test

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// TestOAuthStates: a state is taken back once; an unknown one is
// ENOTFOUND, one older than ten minutes EINVALID (and gone all the same);
// starting another forgets the expired ones.
func TestOAuthStates(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "hub-app")
	if err := f.s.CreateUser(f.ctx, "owner@example.com", "a long enough password", false, "acme", domain.RoleOwner); err != nil {
		t.Fatal(err)
	}
	user := struct{ ID int64 }{int64(pgtest.Scalar(t, f.s.Pool(), `SELECT id FROM users WHERE email = 'owner@example.com'`))}
	start := domain.AppOAuthStart{StateHash: hash("state-1"), NonceHash: hash("nonce"), UserID: user.ID, TenantID: f.acme,
		AppID: app.ID, ProviderName: "hubspot"}
	if err := f.s.StartAppOAuth(f.ctx, start); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.TakeAppOAuthState(f.ctx, hash("state-1"))
	if err != nil || !slices.Equal(got.NonceHash, start.NonceHash) || got.UserID != user.ID || got.TenantID != f.acme ||
		got.TenantSlug != "acme" || got.AppID != app.ID || got.ProviderName != "hubspot" || got.CreatedAt.IsZero() {
		t.Fatalf("taken: %+v, %v", got, err)
	}
	if _, err := f.s.TakeAppOAuthState(f.ctx, hash("state-1")); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("taken twice: %v, want ENOTFOUND", err)
	}
	if _, err := f.s.TakeAppOAuthState(f.ctx, hash("never")); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("an unknown state: %v, want ENOTFOUND", err)
	}

	start.StateHash = hash("state-2")
	if err := f.s.StartAppOAuth(f.ctx, start); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Pool().Exec(f.ctx, `UPDATE app_oauth_states SET created_at = now() - interval '11 minutes'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.TakeAppOAuthState(f.ctx, hash("state-2")); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("an expired state: %v, want EINVALID", err)
	}
	start.StateHash = hash("state-3")
	if err := f.s.StartAppOAuth(f.ctx, start); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Pool().Exec(f.ctx, `UPDATE app_oauth_states SET created_at = now() - interval '11 minutes'`); err != nil {
		t.Fatal(err)
	}
	start.StateHash = hash("state-4")
	if err := f.s.StartAppOAuth(f.ctx, start); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM app_oauth_states`); n != 1 {
		t.Fatalf("%d states kept, want the fresh one alone", n)
	}
}

// TestInstallByOAuth: an install creates the tenant's provider when
// missing, maps the portal with its tokens sealed (never plaintext in the
// table) and audits both; installing again renews the tokens; the portal
// for another tenant is refused naming it; renewed tokens are saved; a
// refused refresh marks the install needs_reconnect, audited once.
func TestInstallByOAuth(t *testing.T) {
	t.Parallel()
	f := setup(t)
	app := f.createApp(t, "hub-app")
	tokens := domain.AppTokens{AccessToken: "CO-access-token-one", RefreshToken: "na1-refresh-token-one",
		Expiry: time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)}
	in, err := f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.acme, PortalID: 62515,
		ProviderName: "hubspot", NewSecret: "generated-client-secret-0123", NewConfig: map[string]string{"allow_v1": "false"},
		Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	if in.ProviderName != "hubspot" || in.TenantSlug != "acme" || !in.HasTokens || in.Status != domain.InstallActive || in.PortalID != 62515 {
		t.Fatalf("installed %+v", in)
	}
	p, err := f.s.ProviderSummary(f.ctx, f.acme, "hubspot")
	if err != nil || p.Kind != domain.AppKindHubSpot || p.ID != in.ProviderID || p.ActiveSecrets != 1 {
		t.Fatalf("the provider created: %+v, %v", p, err)
	}
	for _, secret := range []string{tokens.AccessToken, tokens.RefreshToken} {
		if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM app_installs
			WHERE position(convert_to('`+secret+`', 'UTF8') in tokens_ciphertext) > 0`); n != 0 {
			t.Fatal("an install holds a token in plaintext")
		}
	}
	if got, err := f.s.InstallTokens(f.ctx, f.acme, in.ID); err != nil || !got.Expiry.Equal(tokens.Expiry) ||
		got.AccessToken != tokens.AccessToken || got.RefreshToken != tokens.RefreshToken {
		t.Fatalf("tokens read back: %v", err)
	}
	if _, err := f.s.InstallTokens(f.ctx, f.globex, in.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("the install's tokens read as another tenant's: %v, want ENOTFOUND", err)
	}

	// Installed again into the same provider: the new tokens replace the old.
	tokens.AccessToken, tokens.RefreshToken = "CO-access-token-two", "na1-refresh-token-two"
	again, err := f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.acme, PortalID: 62515,
		ProviderName: "hubspot", Tokens: tokens})
	if err != nil || again.ID != in.ID {
		t.Fatalf("installed again: %+v, %v", again, err)
	}
	if got, _ := f.s.InstallTokens(f.ctx, f.acme, in.ID); got.RefreshToken != "na1-refresh-token-two" {
		t.Fatal("installing again should store the new tokens")
	}
	// The portal for another tenant, and a provider of another kind.
	_, err = f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.globex, PortalID: 62515,
		ProviderName: "hub", Tokens: tokens})
	if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(err.Error(), "installed for tenant acme (provider hubspot)") {
		t.Fatalf("the portal for globex: %v, want ECONFLICT naming acme", err)
	}
	if _, err := f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.acme, PortalID: 777,
		ProviderName: "crm", Tokens: tokens}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("a standard provider: %v, want EINVALID", err)
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM providers WHERE tenant_id = `+strconv.FormatInt(f.globex, 10)); n != 1 {
		t.Fatalf("globex has %d providers after a refused install, want its hub alone", n)
	}

	// Renewal and a refused refresh.
	renewed := domain.AppTokens{AccessToken: "CO-access-token-three", RefreshToken: "na1-refresh-token-two", Expiry: time.Now().Add(time.Hour)}
	if err := f.s.SaveInstallTokens(f.ctx, f.acme, in.ID, renewed); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.s.InstallTokens(f.ctx, f.acme, in.ID); got.AccessToken != "CO-access-token-three" {
		t.Fatal("the renewed tokens should be stored")
	}
	if err := f.s.SaveInstallTokens(f.ctx, f.globex, in.ID, renewed); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("tokens saved as another tenant's: %v, want ENOTFOUND", err)
	}
	for range 2 {
		if err := f.s.MarkNeedsReconnect(f.ctx, f.acme, in.ID, "BAD_REFRESH_TOKEN"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := f.s.PortalInstall(f.ctx, app.ID, 62515); got.Status != domain.InstallNeedsReconnect {
		t.Fatalf("status after a refused refresh: %q", got.Status)
	}
	if err := f.s.SaveInstallTokens(f.ctx, f.acme, in.ID, renewed); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.s.PortalInstall(f.ctx, app.ID, 62515); got.Status != domain.InstallActive {
		t.Fatalf("status after new tokens: %q", got.Status)
	}
	want := []string{
		"app_install hub-app portal 62515: installed by OAuth for provider hubspot, with its tokens",
		"app_install hub-app portal 62515: installed by OAuth for provider hubspot, with its tokens",
		"app_needs_reconnect hub-app portal 62515: needs reconnect: BAD_REFRESH_TOKEN; an owner must install the app again",
	}
	if got := f.audit(t, f.acme); !slices.Equal(got, want) {
		t.Fatalf("acme's audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	entries, _, err := f.s.AuditLog(f.ctx, domain.AuditQuery{TenantID: f.acme, Action: domain.AuditProviderCreate}, domain.Page{Limit: 10})
	if err != nil || len(entries) != 3 || entries[0].Target != "hubspot" ||
		entries[0].Summary != "kind hubspot; settings allow_v1=false; one secret; created by the OAuth install of app hub-app" {
		t.Fatalf("the provider's creation audited: %+v, %v", entries, err)
	}
}
