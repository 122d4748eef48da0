package web

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// reconciliationPath is the admin page of the last reconciliation report.
const reconciliationPath = "/admin/reconciliation"

func (s *Server) handleReconciliation(w http.ResponseWriter, r *http.Request) {
	p := views.ReconciliationPage{Layout: s.layout(r, "Reconciliation", "reconciliation")}
	report, err := s.reconcile.LastReconciliation(r.Context())
	switch {
	case err == nil:
		p.Report, p.Age = &report, waitedFor(s.now().Sub(report.StartedAt))
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		s.consoleError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, views.Reconciliation(p))
}
