package admin

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// ReconciliationPath is the admin page of the last reconciliation report.
const ReconciliationPath = "/admin/reconciliation"

// HandleReconciliation shows the last reconciliation report.
func (h Pages) HandleReconciliation(w http.ResponseWriter, r *http.Request) {
	p := views.ReconciliationPage{Layout: h.Console.Layout(r, "Reconciliation", "reconciliation")}
	report, err := h.Store.LastReconciliation(r.Context())
	switch {
	case err == nil:
		p.Report, p.Age = &report, shell.WaitedFor(h.Now().Sub(report.StartedAt))
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, http.StatusOK, views.Reconciliation(p))
}
