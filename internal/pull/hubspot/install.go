package hubspot

import (
	"context"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// storeTimeout bounds marking an install needs_reconnect.
const storeTimeout = 10 * time.Second

// InstallStore is what an install's API calls need of storage: the app's
// client secret, the install's tokens, and where renewed tokens and a
// refused refresh are kept.
type InstallStore interface {
	AppSecrets(ctx context.Context, appID int64) ([]string, error)
	InstallTokens(ctx context.Context, tenantID, installID int64) (domain.AppTokens, error)
	SaveInstallTokens(ctx context.Context, tenantID, installID int64, t domain.AppTokens) error
	MarkNeedsReconnect(ctx context.Context, tenantID, installID int64, reason string) error
}

// AppClient is the API client of app, with its current client secret.
func AppClient(ctx context.Context, store InstallStore, app domain.App, log *slog.Logger) (*Client, error) {
	secrets, err := store.AppSecrets(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	if len(secrets) == 0 {
		return nil, domain.Errorf(domain.EINVALID, "app %s has no client secret", app.Name)
	}
	return NewClient(AppConfig{BaseURL: app.APIBaseURL, ClientID: app.ClientID, ClientSecret: secrets[0],
		AllowPrivate: app.AllowPrivate}, log)
}

// ForInstall returns the client of the install's app and the install's
// token source: renewed before expiry and once on a 401, each renewal
// stored, and a refused refresh token marking the install
// needs_reconnect (audited once) so that an owner sees it, rather than
// every later call failing in silence. An install without tokens (mapped
// by hand) is ENOTFOUND.
func ForInstall(ctx context.Context, store InstallStore, app domain.App, in domain.AppInstall, log *slog.Logger) (*Client, *TokenSource, error) {
	if !in.HasTokens {
		return nil, nil, domain.Errorf(domain.ENOTFOUND, "portal %d of app %s was connected by hand: it has no tokens to call HubSpot with; install it by OAuth", in.PortalID, app.Name)
	}
	c, err := AppClient(ctx, store, app, log)
	if err != nil {
		return nil, nil, err
	}
	t, err := store.InstallTokens(ctx, in.TenantID, in.ID)
	if err != nil {
		return nil, nil, err
	}
	ts := c.InstallTokens(Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry},
		func(ctx context.Context, n Token) error {
			return store.SaveInstallTokens(ctx, in.TenantID, in.ID, domain.AppTokens{AccessToken: n.AccessToken, RefreshToken: n.RefreshToken, Expiry: n.Expiry})
		})
	ts.onRefused = func(ctx context.Context) {
		// Marked with a context of its own: the call's may be ending.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		if err := store.MarkNeedsReconnect(ctx, in.TenantID, in.ID, "HubSpot refused its refresh token"); err != nil {
			c.log.Error("hubspot: could not mark an install needs_reconnect", "app", app.Name, "portal", in.PortalID, "err", err)
		}
	}
	return c, ts, nil
}
