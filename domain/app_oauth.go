package domain

import (
	"context"
	"time"
)

// The OAuth install of an app (docs/contract/apps.md#the-oauth-install): an
// owner's "Connect HubSpot" leaves a state, which the provider's consent
// page sends back with a code; the callback takes the state (once), trades
// the code for the install's tokens and installs the portal.

// AppOAuthStateLife is how long an install's state may be used.
const AppOAuthStateLife = 10 * time.Minute

// Audited in the install's tenant's log: an install by OAuth, and an
// install whose refresh token the provider refused.
const (
	AuditAppInstall        = "app_install"
	AuditAppNeedsReconnect = "app_needs_reconnect"
)

// AppOAuthStart is an install under way, as "Connect" stores it. The state
// and the nonce are kept as hashes: the state travels in the authorize URL,
// the nonce in the operator's console session.
type AppOAuthStart struct {
	StateHash    []byte
	NonceHash    []byte
	UserID       int64
	TenantID     int64
	AppID        int64
	ProviderName string
}

// AppOAuthState is a state taken back by the callback.
type AppOAuthState struct {
	AppOAuthStart
	TenantSlug string
	CreatedAt  time.Time
}

// AppTokens are an install's OAuth tokens, stored sealed together.
type AppTokens struct {
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token"`
	Expiry       time.Time `json:"expiry"` // the access token's
}

// AppOAuthInstall is what the callback installs.
type AppOAuthInstall struct {
	AppID    int64
	TenantID int64
	PortalID int64
	// ProviderName is the tenant's provider of the app's kind to reuse, or
	// to create with NewSecret and NewConfig (the kind's Setup) when missing.
	ProviderName string
	NewSecret    string
	NewConfig    map[string]string
	Tokens       AppTokens
}

// AppOAuthService stores the OAuth installs: their states, their tokens.
type AppOAuthService interface {
	// StartAppOAuth stores an install's state (and forgets expired ones).
	StartAppOAuth(ctx context.Context, s AppOAuthStart) error
	// TakeAppOAuthState deletes the state of that hash and returns it:
	// ENOTFOUND when there is none (unknown or used already), EINVALID when
	// it was older than AppOAuthStateLife.
	TakeAppOAuthState(ctx context.Context, stateHash []byte) (AppOAuthState, error)
	// InstallByOAuth, in one transaction, creates or reuses the tenant's
	// provider, maps the portal to it with the tokens sealed (replacing
	// those of an install of the portal there already) and audits it. A
	// portal installed for another tenant or provider is ECONFLICT; the
	// error's message names them, for admins.
	InstallByOAuth(ctx context.Context, in AppOAuthInstall) (AppInstall, error)
	// InstallTokens are an install's tokens; ENOTFOUND for an install
	// without any.
	InstallTokens(ctx context.Context, tenantID, installID int64) (AppTokens, error)
	// SaveInstallTokens stores renewed tokens (the token source's
	// onRenewed), the install active again.
	SaveInstallTokens(ctx context.Context, tenantID, installID int64, t AppTokens) error
	// MarkNeedsReconnect marks an install whose refresh token the provider
	// refused: an owner must install it again. Audited once.
	MarkNeedsReconnect(ctx context.Context, tenantID, installID int64, reason string) error
}
