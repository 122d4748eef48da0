package console

import (
	"net/http"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// adminHomePath is the admin area's landing page.
const adminHomePath = "/admin"

// handleAdminHome shows what the admin area holds: the workspaces, the
// operators and the last reconciliation, each linking to its page.
func (h adminPages) handleAdminHome(w http.ResponseWriter, r *http.Request) {
	p := views.AdminHomePage{Layout: h.layout(r, "Admin", "admin-home")}
	ops, err := h.operators.Operators(r.Context())
	if err != nil {
		h.consoleError(w, r, err)
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
	report, err := h.reconcile.LastReconciliation(r.Context())
	switch {
	case err == nil:
		p.Report, p.ReportAge = &report, waitedFor(h.now().Sub(report.StartedAt))
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.AdminHome(p))
}

// NotFound is the console's page for a URL it does not serve: a styled
// page in the console's frame for a signed-in operator, the sign-in page
// for anyone else (so that it tells a stranger nothing). URLs of the API,
// the webhooks and the metrics (when served on another address) get JSON.
func (h *Handler) NotFound() http.Handler {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heading := "Page not found"
		text := "There is no page at " + r.URL.Path + ". It may have moved, or the link may be mistyped."
		h.render(w, r, http.StatusNotFound, views.NotFound(h.layout(r, heading, ""), heading, text))
	})
	framed := h.securityHeaders(limitConsoleBody(h.loadSession(h.requireUser(page))))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/"), strings.HasPrefix(r.URL.Path, "/webhooks/"), r.URL.Path == "/metrics":
			httpx.WriteError(w, http.StatusNotFound, "not found")
		case currentUser(r.Context()).ID != 0:
			// Inside the console's routes (an unknown page of a workspace):
			// the session, the operator and the tenant are already known.
			page.ServeHTTP(w, r)
		default:
			framed.ServeHTTP(w, r)
		}
	})
}
