package admin

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// AppsPath is the admin page of the apps (docs/contract/apps.md): each
// with its installs, and one page per app.
const AppsPath = "/admin/apps"

// HandleApps lists the apps with how many installs each has, and how many
// of those need an owner to install the app again.
func (h Pages) HandleApps(w http.ResponseWriter, r *http.Request) {
	apps, err := h.Store.Apps(r.Context())
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	p := views.AdminAppsPage{Layout: h.Console.Layout(r, "Apps", "admin-apps")}
	for _, a := range apps {
		installs, err := h.Store.AppInstalls(r.Context(), a.Name)
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
		row := views.AdminAppRow{App: a, Installs: len(installs)}
		for _, in := range installs {
			if in.Status == domain.InstallNeedsReconnect {
				row.NeedReconnect++
			}
		}
		p.Apps = append(p.Apps, row)
	}
	h.Console.Render(w, r, http.StatusOK, views.AdminApps(p))
}

// HandleApp shows one app: its fields and webhook URL, its installs and
// the portals installed for no tenant that sent it events.
func (h Pages) HandleApp(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, err := h.Store.App(ctx, chi.URLParam(r, "name"))
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	installs, err := h.Store.AppInstalls(ctx, a.Name)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	unrouted, err := h.Store.AppUnrouted(ctx, a.ID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, http.StatusOK, views.AdminApp(views.AdminAppPage{Layout: h.Console.Layout(r, "App "+a.Name, "admin-apps"),
		App: a, WebhookURL: httpx.BaseURL(h.PublicURL, r) + domain.AppWebhookPath(a.Name),
		Installs: installs, Unrouted: unrouted}))
}
