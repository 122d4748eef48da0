package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// AdminStore is what the admin API reads: the service's apps, their
// installs and unrouted portals, behind an admin token.
type AdminStore interface {
	domain.AdminTokenService // requireAdminToken
	Apps(ctx context.Context) ([]domain.App, error)
	App(ctx context.Context, name string) (domain.App, error)
	AppInstalls(ctx context.Context, appName string) ([]domain.AppInstall, error)
	AppUnrouted(ctx context.Context, appID int64) ([]domain.AppUnrouted, error)
}

// adminAppHandlers serve /api/v1/admin/apps.
type adminAppHandlers struct {
	resource
	publicURL string // the base of the apps' webhook URLs; "" to build it from each request
}

// adminAppJSON is an app as the admin API shows it: never its secret.
type adminAppJSON struct {
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	AppID      int64     `json:"app_id"`
	ClientID   string    `json:"client_id"`
	Scopes     []string  `json:"scopes"`
	WebhookURL string    `json:"webhook_url"`
	CreatedAt  jsonTime  `json:"created_at"`
	RotatedAt  *jsonTime `json:"rotated_at"`
}

type adminInstallJSON struct {
	PortalID  int64    `json:"portal_id"`
	Tenant    string   `json:"tenant"`
	Provider  string   `json:"provider"`
	Tokens    bool     `json:"tokens"`
	Status    string   `json:"status"`
	CreatedAt jsonTime `json:"created_at"`
}

type adminUnroutedJSON struct {
	PortalID int64           `json:"portal_id"`
	Count    int64           `json:"count"`
	LastSeen jsonTime        `json:"last_seen"`
	Sample   json.RawMessage `json:"sample"`
}

// appWebhookURL is the app endpoint's URL under base: the target URL an
// admin sets at the provider.
func appWebhookURL(base, name string) string {
	return strings.TrimRight(base, "/") + domain.AppWebhookPath(name)
}

func (h adminAppHandlers) appJSON(r *http.Request, a domain.App) adminAppJSON {
	scopes := a.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return adminAppJSON{Name: a.Name, Kind: a.Kind, AppID: a.ProviderAppID, ClientID: a.ClientID, Scopes: scopes,
		WebhookURL: appWebhookURL(httpx.BaseURL(h.publicURL, r), a.Name), CreatedAt: jsonTime(a.CreatedAt),
		RotatedAt: optionalNonZeroTime(a.RotatedAt)}
}

// handleApps answers GET /api/v1/admin/apps: every app, with how many
// installs each has, in one page.
func (h adminAppHandlers) handleApps(w http.ResponseWriter, r *http.Request) {
	apps, err := h.store.Apps(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	type listed struct {
		adminAppJSON
		InstallCount int `json:"install_count"`
	}
	out := make([]listed, len(apps))
	for i, a := range apps {
		installs, err := h.store.AppInstalls(r.Context(), a.Name)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out[i] = listed{h.appJSON(r, a), len(installs)}
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"apps": out, "next_cursor": nil})
}

// handleApp answers GET /api/v1/admin/apps/{name}: the app, its installs
// and the portals installed for no tenant that sent it events.
func (h adminAppHandlers) handleApp(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, err := h.store.App(ctx, chi.URLParam(r, "name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	installs, err := h.store.AppInstalls(ctx, a.Name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	unrouted, err := h.store.AppUnrouted(ctx, a.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := struct {
		adminAppJSON
		Installs []adminInstallJSON  `json:"installs"`
		Unrouted []adminUnroutedJSON `json:"unrouted"`
	}{adminAppJSON: h.appJSON(r, a), Installs: make([]adminInstallJSON, len(installs)), Unrouted: make([]adminUnroutedJSON, len(unrouted))}
	for i, in := range installs {
		out.Installs[i] = adminInstallJSON{PortalID: in.PortalID, Tenant: in.TenantSlug, Provider: in.ProviderName,
			Tokens: in.HasTokens, Status: in.Status, CreatedAt: jsonTime(in.CreatedAt)}
	}
	for i, u := range unrouted {
		sample := json.RawMessage(u.LastSample)
		if !json.Valid(sample) {
			sample, _ = json.Marshal(string(u.LastSample)) // kept as received: shown as a string when not JSON
		}
		out.Unrouted[i] = adminUnroutedJSON{PortalID: u.PortalID, Count: u.Count, LastSeen: jsonTime(u.LastSeen), Sample: sample}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
