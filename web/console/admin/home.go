package admin

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// HomePath is the admin area's landing page.
const HomePath = "/admin"

// HandleHome shows what the admin area holds: the workspaces, the
// operators, the last reconciliation and the apps, each linking to its page.
func (h Pages) HandleHome(w http.ResponseWriter, r *http.Request) {
	h.renderHome(w, r, http.StatusOK, views.NewTenantForm{})
}

// renderHome shows the admin home, with the new workspace form as last
// submitted.
func (h Pages) renderHome(w http.ResponseWriter, r *http.Request, status int, form views.NewTenantForm) {
	p := views.AdminHomePage{Layout: h.Console.Layout(r, "Admin", "admin-home"), Form: form}
	tenants, err := h.Store.Tenants(r.Context())
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	for _, t := range tenants {
		if t.ArchivedAt != nil {
			p.Archived = append(p.Archived, t)
		} else {
			p.Active = append(p.Active, t)
		}
	}
	ops, err := h.Store.Operators(r.Context())
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	for _, o := range ops {
		switch {
		case !o.DisabledAt.IsZero():
			p.Disabled++
		case o.IsAdmin:
			p.Admins++
		default:
			p.Members++
		}
	}
	apps, err := h.Store.Apps(r.Context())
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	p.Apps = len(apps)
	report, err := h.Store.LastReconciliation(r.Context())
	switch {
	case err == nil:
		p.Report, p.ReportAge = &report, shell.WaitedFor(h.Now().Sub(report.StartedAt))
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, status, views.AdminHome(p))
}
