package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// TenantsPath is where the admin home's workspace forms post: POST
// TenantsPath creates one, TenantsPath/{slug}/rename, /archive, /unarchive
// and /delete change it.
const TenantsPath = "/admin/tenants"

// HandleCreateTenant creates a workspace and opens it; a mistake in the
// form comes back beside it, with what was typed.
func (h Pages) HandleCreateTenant(w http.ResponseWriter, r *http.Request) {
	form := views.NewTenantForm{Slug: strings.TrimSpace(r.PostFormValue("slug")), Name: strings.TrimSpace(r.PostFormValue("name"))}
	t, err := h.Store.CreateTenant(r.Context(), form.Slug, form.Name)
	if err != nil {
		status := http.StatusBadRequest
		switch domain.ErrorCode(err) {
		case domain.EINVALID:
		case domain.ECONFLICT:
			status = http.StatusConflict
		default:
			h.Console.Error(w, r, err)
			return
		}
		form.Error = domain.ErrorMessage(err)
		h.renderHome(w, r, status, form)
		return
	}
	h.Console.RedirectWithFlash(w, r, "/t/"+t.Slug, "ok",
		fmt.Sprintf("Workspace %s created. Connect a provider to start receiving its webhooks.", t.Name))
}

// tenantChange ends a change of the workspace {slug} on the admin home: a
// refusal as an error flash there, an unknown workspace as 404.
func (h Pages) tenantChange(w http.ResponseWriter, r *http.Request, err error, ok string) {
	switch {
	case err == nil:
		h.Console.RedirectWithFlash(w, r, HomePath, "ok", ok)
	case domain.ErrorCode(err) == domain.EINVALID || domain.ErrorCode(err) == domain.ECONFLICT:
		h.Console.RedirectWithFlash(w, r, HomePath, "error", domain.ErrorMessage(err))
	default:
		h.Console.Error(w, r, err)
	}
}

// HandleRenameTenant changes a workspace's display name; its slug, and so
// its URLs, stay.
func (h Pages) HandleRenameTenant(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	t, err := h.Store.RenameTenant(r.Context(), slug, strings.TrimSpace(r.PostFormValue("name")))
	h.tenantChange(w, r, err, fmt.Sprintf("Workspace %s is now named %s.", slug, t.Name))
}

// HandleArchiveTenant archives a workspace or makes it active again.
func (h Pages) HandleArchiveTenant(archive bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		slug := chi.URLParam(r, "slug")
		if archive {
			_, err := h.Store.ArchiveTenant(r.Context(), slug)
			h.tenantChange(w, r, err, fmt.Sprintf("Workspace %s is archived: its webhooks and API answer 404 and it is hidden; "+
				"its data is kept until you unarchive or delete it.", slug))
			return
		}
		_, err := h.Store.UnarchiveTenant(r.Context(), slug)
		h.tenantChange(w, r, err, fmt.Sprintf("Workspace %s is active again: it receives deliveries and its API answers.", slug))
	}
}

// HandleDeleteTenant erases a workspace and all its data, once the form's
// confirm field repeats its slug.
func (h Pages) HandleDeleteTenant(w http.ResponseWriter, r *http.Request) {
	slug := chi.URLParam(r, "slug")
	if confirm := strings.TrimSpace(r.PostFormValue("confirm")); confirm != slug {
		if _, err := h.Store.Tenant(r.Context(), slug); err != nil {
			h.Console.Error(w, r, err)
			return
		}
		h.Console.RedirectWithFlash(w, r, HomePath, "error",
			fmt.Sprintf("Workspace %s was not deleted: type its slug, %s, to confirm.", slug, slug))
		return
	}
	erased, err := h.Store.DeleteTenant(r.Context(), slug)
	var rows int64
	for _, t := range erased {
		rows += t.Rows
	}
	h.tenantChange(w, r, err, fmt.Sprintf("Workspace %s is deleted: %d rows erased. Its audit log is kept.", slug, rows))
}
