package domain

import (
	"context"
	"net/url"
	"strings"
	"time"
)

// The app endpoint (POST /webhooks/apps/{name}, docs/contract/apps.md)
// routes each portal's events of an app's batch to the tenant's provider
// the portal is installed for. Events of a portal installed for no tenant
// are applied nowhere: they are counted per app, portal and minute
// ("unrouted"), with the last sample of each portal.

// AppUnroutedRetention is how long the counts of unrouted events are kept.
const AppUnroutedRetention = 7 * 24 * time.Hour

// UnroutedPortal is what one batch brought for a portal installed for no
// tenant: how many events and their sample (that portal's events alone,
// as a JSON array).
type UnroutedPortal struct {
	PortalID int64 // 0 for events without a usable portalId
	N        int64
	Sample   []byte
}

// AppUnrouted is how many events of a portal installed for no tenant an
// app received within AppUnroutedRetention, and the last of them.
type AppUnrouted struct {
	PortalID   int64
	Count      int64
	LastSeen   time.Time
	LastSample []byte // the portal's events of the last batch, a JSON array
}

// AppRouting is what the app endpoint needs of storage beyond the ingest
// of a provider URL.
type AppRouting interface {
	// App is the app of that name, or ENOTFOUND.
	App(ctx context.Context, name string) (App, error)
	// AppSecrets are the client secrets that verify now, the current one
	// first.
	AppSecrets(ctx context.Context, appID int64) ([]string, error)
	// PortalRoutes are the installs of the portals of app appID, by
	// portal, read at once for a batch; a portal installed for no tenant
	// (or for a provider that is gone) is not in the map.
	PortalRoutes(ctx context.Context, appID int64, portalIDs []int64) (map[int64]AppInstall, error)
	// CountUnrouted adds the batch's unrouted events, received at at, to
	// the app's counts and keeps each portal's sample, in one transaction.
	CountUnrouted(ctx context.Context, appID int64, at time.Time, portals []UnroutedPortal) error
	// AppUnrouted is the app's unrouted events per portal within
	// AppUnroutedRetention, by portal.
	AppUnrouted(ctx context.Context, appID int64) ([]AppUnrouted, error)
	// UninstallPortal removes the install of portalID for app appID with
	// its tokens, as DisconnectPortal does, when HubSpot says the app was
	// uninstalled there at at; audited AuditAppDisconnect in its tenant.
	// An install made after at (a retried, older uninstall) is kept. It
	// returns what was removed, or ENOTFOUND when nothing was.
	UninstallPortal(ctx context.Context, appID, portalID int64, at time.Time) (AppInstall, error)
}

// Audit actions of an app's journal subscriptions (outside any tenant)
// and of a snapshot asked for to settle a conflict (in its tenant).
const (
	AuditAppSubscriptions          = "app_subscriptions"
	AuditConflictSnapshotRequested = "conflict_snapshot_requested"
)

// AppJournalService is what managing an app's Webhooks Journal asks of
// storage beyond AppService and AppOAuthService.
type AppJournalService interface {
	// ProviderInstall is the install whose portal's events go to the
	// tenant's provider of that name, with its app; ENOTFOUND when the
	// provider receives no portal of any app.
	ProviderInstall(ctx context.Context, tenantID int64, providerName string) (App, AppInstall, error)
	// RecordSnapshotRequested audits, in the tenant's log, that the
	// provider was asked for a snapshot of the conflict's record, with
	// the request's status id.
	RecordSnapshotRequested(ctx context.Context, tenantID int64, c Conflict, statusID string) error
	// RecordAppSubscriptions audits, outside any tenant, what changed in
	// the app's journal subscriptions (summary).
	RecordAppSubscriptions(ctx context.Context, appName, summary string) error
}

// appWebhookPrefix starts the path of every app's webhook URL.
const appWebhookPrefix = "/webhooks/apps/"

// AppWebhookPath is the path of app name's webhook URL, to be joined to
// the public base.
func AppWebhookPath(name string) string { return appWebhookPrefix + url.PathEscape(name) }

// AppOfWebhookPath is the app whose webhook URL path is, as a delivery's
// request keeps it; false for a provider URL's.
func AppOfWebhookPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, appWebhookPrefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	name, err := url.PathUnescape(rest)
	return name, err == nil
}
