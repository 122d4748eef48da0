package apps_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

// TestInstallTokensInUse drives an OAuth install's token source
// (hubspot.ForInstall) against the fake's OAuth, as
// https://developers.hubspot.com/docs/api/oauth/tokens describes it
// (refresh_token grants; a revoked refresh token is BAD_REFRESH_TOKEN),
// with its tokens stored in PostgreSQL: an access token about to expire is
// renewed before the call and the renewal stored; a 401 renews once and
// retries; a refused refresh marks the install needs_reconnect, audited
// once, and later calls fail without asking HubSpot again (the journal
// reader and the conflict snapshot skip an install so marked at their
// next turn); installing the app again makes it active.
func TestInstallTokensInUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hs := hubspottest.New(t)
	fake := hs.App()
	app, err := f.s.CreateApp(f.ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "hub-app", ProviderAppID: fake.ID,
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, APIBaseURL: hs.URL(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	const portal = 62515
	hs.AppendEntry(portal, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 1, Action: "UPDATE", OccurredAt: time.Now().UnixMilli()})
	access, refresh := hs.InstallTokens(portal)
	// Stored as the callback stored them, the access token two minutes
	// from its end: within the refresh margin.
	in, err := f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.acme, PortalID: portal,
		ProviderName: "hub", Tokens: domain.AppTokens{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(2 * time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() domain.AppTokens {
		t.Helper()
		tok, err := f.s.InstallTokens(f.ctx, f.acme, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	c, ts, err := hubspot.ForInstall(f.ctx, f.s, app, in, quiet)
	if err != nil {
		t.Fatal(err)
	}
	journal := c.Journal(ts, portal)

	// About to expire: renewed before the call, the renewal stored.
	if _, err := journal.Earliest(f.ctx); err != nil {
		t.Fatal(err)
	}
	renewed := stored()
	if hs.Refreshes() != 1 || renewed.AccessToken == access || renewed.RefreshToken != refresh ||
		time.Until(renewed.Expiry) < 20*time.Minute {
		t.Fatalf("after a call with a token about to expire: %d refreshes, stored %+v", hs.Refreshes(), renewed.Expiry)
	}

	// HubSpot refuses the access token (401) though it looks good: one
	// renewal, the call retried and answered.
	hs.ExpireAccessTokens()
	if _, err := journal.Earliest(f.ctx); err != nil {
		t.Fatalf("after a 401: %v", err)
	}
	if again := stored(); hs.Refreshes() != 2 || again.AccessToken == renewed.AccessToken {
		t.Fatalf("after a 401: %d refreshes, access token renewed: %v", hs.Refreshes(), again.AccessToken != renewed.AccessToken)
	}

	// The app is uninstalled from the portal: the refresh is refused.
	hs.Uninstall(portal)
	if _, err := journal.Earliest(f.ctx); !errors.Is(err, hubspot.ErrRefreshRefused) {
		t.Fatalf("after the uninstall: %v, want ErrRefreshRefused", err)
	}
	refreshes := hs.Refreshes()
	if refreshes != 3 {
		t.Fatalf("%d refreshes, want the refused one counted", refreshes)
	}
	got, err := f.s.PortalInstall(f.ctx, app.ID, portal)
	if err != nil || got.Status != domain.InstallNeedsReconnect {
		t.Fatalf("install after the refused refresh: %+v, %v", got, err)
	}
	for range 2 {
		if _, err := journal.Earliest(f.ctx); !errors.Is(err, hubspot.ErrRefreshRefused) {
			t.Fatalf("a later call: %v, want ErrRefreshRefused at once", err)
		}
	}
	if hs.Refreshes() != refreshes {
		t.Fatalf("later calls asked HubSpot again: %d refreshes, want %d", hs.Refreshes(), refreshes)
	}
	marked := 0
	for _, a := range f.audit(t, f.acme) {
		if strings.HasPrefix(a, domain.AuditAppNeedsReconnect+" ") {
			marked++
		}
	}
	if marked != 1 {
		t.Fatalf("app_needs_reconnect audited %d times, want once: %q", marked, f.audit(t, f.acme))
	}

	// The owner installs the app again: active, with the new tokens.
	access, refresh = hs.InstallTokens(portal)
	if _, err := f.s.InstallByOAuth(f.ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: f.acme, PortalID: portal,
		ProviderName: "hub", Tokens: domain.AppTokens{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.PortalInstall(f.ctx, app.ID, portal); err != nil || got.Status != domain.InstallActive || stored().RefreshToken != refresh {
		t.Fatalf("installed again: %+v, %v", got, err)
	}
}
