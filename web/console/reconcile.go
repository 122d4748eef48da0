package console

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// reconciliationPath is the admin page of the last reconciliation report.
const reconciliationPath = "/admin/reconciliation"

func (h adminPages) handleReconciliation(w http.ResponseWriter, r *http.Request) {
	p := views.ReconciliationPage{Layout: h.layout(r, "Reconciliation", "reconciliation")}
	report, err := h.reconcile.LastReconciliation(r.Context())
	switch {
	case err == nil:
		p.Report, p.Age = &report, waitedFor(h.now().Sub(report.StartedAt))
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.Reconciliation(p))
}
