package domain

import (
	"context"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// An App is a provider's public app that an admin registers once for the
// whole service (docs/contract/apps.md): each customer installs it, and
// the provider sends every installed portal's webhooks to the app's one
// URL, signed with its client secret. Apps are global, not a tenant's;
// each install maps one portal to a tenant's provider.

// AppKindHubSpot is the one kind of app so far: a HubSpot public app. An
// install connects a provider of the same kind name.
const AppKindHubSpot = "hubspot" // not a provider kind: an app's kind

// DefaultAppProvider is the provider an install creates or reuses unless
// its operator names another.
const DefaultAppProvider = "hubspot" // not a provider kind: a default provider name

// HubSpot's own OAuth endpoints, an app's defaults.
const (
	DefaultHubSpotAuthorizeURL = "https://app.hubspot.com/oauth/authorize"
	DefaultHubSpotAPIBaseURL   = "https://api.hubapi.com"
)

// AppSecretGrace is how long a rotated-out client secret still verifies,
// as long as a destination's rotated-out secret still signs
// (stream.DestinationSecretGrace): deliveries HubSpot signed before the
// rotation, and its retries, still verify.
const AppSecretGrace = 24 * time.Hour

// App is an app as callers see it: never its client secret, which only
// the code that verifies and exchanges reads (AppService.AppSecrets).
type App struct {
	ID            int64
	Kind          string // AppKindHubSpot
	Name          string // unique; in the app's webhook URL
	ProviderAppID int64  // the app's id at its provider (HubSpot's app id)
	ClientID      string
	Scopes        []string // asked for on install
	AuthorizeURL  string
	APIBaseURL    string
	// AllowPrivate lets the URLs be http or private addresses (a test
	// server, a sandbox); only the command line sets it.
	AllowPrivate bool
	CreatedAt    time.Time
	RotatedAt    time.Time // zero until the client secret is first rotated
}

// NewApp is what an admin gives to create an app.
type NewApp struct {
	Kind          string
	Name          string
	ProviderAppID int64
	ClientID      string
	ClientSecret  string
	Scopes        []string
	AuthorizeURL  string // default: the kind's
	APIBaseURL    string // default: the kind's
	AllowPrivate  bool
}

// Bounds of an app's fields.
const (
	maxAppField  = 2048
	maxAppScopes = 100
)

var appScopePattern = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,200}$`)

// Check validates n's form and returns it with the kind's default URLs
// filled in. Whether its URLs may be reached (their addresses) is the
// caller's to check: this reaches out to nothing.
func (n NewApp) Check() (NewApp, error) {
	if n.Kind != AppKindHubSpot {
		return n, Errorf(EINVALID, "app kind %q is not known; the kinds are: %s", n.Kind, AppKindHubSpot)
	}
	if err := ValidateSlug("app", n.Name); err != nil {
		return n, err
	}
	if n.ProviderAppID <= 0 {
		return n, Errorf(EINVALID, "the app id must be the app's positive number at HubSpot")
	}
	if err := checkAppToken("client id", n.ClientID); err != nil {
		return n, err
	}
	if err := CheckAppSecret(n.ClientSecret); err != nil {
		return n, err
	}
	if len(n.Scopes) > maxAppScopes {
		return n, Errorf(EINVALID, "at most %d scopes", maxAppScopes)
	}
	for _, s := range n.Scopes {
		if !appScopePattern.MatchString(s) {
			return n, Errorf(EINVALID, "scope %q must be 1-200 characters of letters, digits and . _ : / -", s)
		}
	}
	n.Scopes = slices.Compact(slices.Sorted(slices.Values(n.Scopes)))
	if n.AuthorizeURL == "" {
		n.AuthorizeURL = DefaultHubSpotAuthorizeURL
	}
	if n.APIBaseURL == "" {
		n.APIBaseURL = DefaultHubSpotAPIBaseURL
	}
	for _, u := range []struct{ what, raw string }{{"authorize URL", n.AuthorizeURL}, {"API base URL", n.APIBaseURL}} {
		if err := checkAppURL(u.what, u.raw, n.AllowPrivate); err != nil {
			return n, err
		}
	}
	return n, nil
}

// CheckAppSecret refuses a client secret that cannot be one: empty, with
// spaces or control characters, or too long. The message never repeats it.
func CheckAppSecret(secret string) error {
	if len(secret) < 8 || len(secret) > maxAppField || strings.ContainsFunc(secret, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Errorf(EINVALID, "the client secret must be one line of 8 to %d characters without spaces", maxAppField)
	}
	return nil
}

func checkAppToken(what, v string) error {
	if v == "" || len(v) > maxAppField || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return Errorf(EINVALID, "the %s is required: one line of at most %d characters without spaces", what, maxAppField)
	}
	return nil
}

// checkAppURL requires an absolute https URL with a host, no user, query
// or fragment; http only when private addresses are allowed.
func checkAppURL(what, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || len(raw) > maxAppField {
		return Errorf(EINVALID, "the %s must be an absolute https URL, such as %s", what, DefaultHubSpotAPIBaseURL)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Errorf(EINVALID, "the %s must have no user name, password, query or fragment", what)
	}
	if u.Scheme == "http" && !allowPrivate {
		return Errorf(EINVALID, "the %s must use https (http only with private addresses allowed, for a test server)", what)
	}
	return nil
}

// Install statuses.
const (
	InstallActive = "active"
	// InstallNeedsReconnect: the provider refused to refresh its tokens;
	// an owner must install the app again.
	InstallNeedsReconnect = "needs_reconnect"
)

// AppInstall maps one portal of an app to a tenant's provider: the app's
// deliveries for the portal are that provider's.
type AppInstall struct {
	ID           int64
	AppID        int64
	AppName      string
	PortalID     int64 // HubSpot's portal (hub) id
	TenantID     int64
	TenantSlug   string
	ProviderID   int64
	ProviderName string
	// HasTokens: installed by OAuth, with tokens to call the portal's API;
	// false for a portal mapped by hand, which receives webhooks only.
	HasTokens bool
	Status    string // InstallActive or InstallNeedsReconnect
	CreatedAt time.Time
}

// Audited actions on apps (outside any tenant) and installs (the tenant's).
const (
	AuditAppCreate     = "app_create"
	AuditAppRotate     = "app_rotate"
	AuditAppDelete     = "app_delete"
	AuditAppConnect    = "app_connect"
	AuditAppDisconnect = "app_disconnect"
)

// AppService manages apps and their installs. Every change is audited:
// apps outside any tenant, installs in their tenant's log.
type AppService interface {
	// CreateApp checks na (NewApp.Check) and stores it, its client secret
	// sealed; ECONFLICT when the name is taken.
	CreateApp(ctx context.Context, na NewApp) (App, error)
	// Apps lists every app by name.
	Apps(ctx context.Context) ([]App, error)
	// App is the app of that name, or ENOTFOUND.
	App(ctx context.Context, name string) (App, error)
	// RotateAppSecret makes secret the app's client secret; the previous
	// one still verifies for AppSecretGrace, and one rotated out before it
	// no longer does.
	RotateAppSecret(ctx context.Context, name, secret string) (App, error)
	// DeleteApp deletes the app with its secrets and installs.
	DeleteApp(ctx context.Context, name string) error
	// ConnectPortal maps portalID of the app to the tenant's provider (of
	// the app's kind), without tokens. A portal already mapped there is
	// returned as it is; one mapped to another tenant or provider is
	// ECONFLICT, naming them (only admins connect by hand).
	ConnectPortal(ctx context.Context, appName string, portalID, tenantID, providerID int64) (AppInstall, error)
	// DisconnectPortal removes the portal's mapping and tokens and returns
	// what it was; ENOTFOUND when the portal is not installed.
	DisconnectPortal(ctx context.Context, appName string, portalID int64) (AppInstall, error)
	// AppInstalls lists the app's installs by portal.
	AppInstalls(ctx context.Context, appName string) ([]AppInstall, error)
	// PortalInstall is the install of portalID for app appID, which the
	// app endpoint routes the portal's events to; ENOTFOUND when none.
	PortalInstall(ctx context.Context, appID, portalID int64) (AppInstall, error)
	// AppSecrets are the client secrets that verify now, the current one
	// first: for the code that verifies deliveries and exchanges tokens
	// alone, never shown.
	AppSecrets(ctx context.Context, appID int64) ([]string, error)
}
