package console

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// reconcileRunTimeout bounds a run asked for from the console; the demo's
// takes about 3 s, a large database's minutes (use tidemark audit there).
const reconcileRunTimeout = 2 * time.Minute

// handleRunReconciliation runs the reconciliation now, as tidemark audit
// does, stores its report (audited) and shows it: admins only, like the
// page.
func (h adminPages) handleRunReconciliation(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), reconcileRunTimeout)
	defer cancel()
	report, err := h.reconcile.RunReconciliation(ctx)
	switch {
	case domain.ErrorCode(err) == domain.ECONFLICT:
		h.redirectWithFlash(w, r, reconciliationPath, "error", domain.ErrorMessage(err))
		return
	case ctx.Err() == context.DeadlineExceeded:
		h.redirectWithFlash(w, r, reconciliationPath, "error", fmt.Sprintf(
			"The reconciliation did not finish within %s: run tidemark audit on a server instead.", reconcileRunTimeout))
		return
	case err != nil:
		h.consoleError(w, r, err)
		return
	}
	h.log.InfoContext(r.Context(), "reconciliation run", "report", report.Summary(), "by", currentUser(r.Context()).Email)
	kind := "ok"
	if report.Total() > 0 {
		kind = "error"
	}
	h.redirectWithFlash(w, r, reconciliationPath, kind, fmt.Sprintf("Reconciliation finished in %s: %s.",
		report.FinishedAt.Sub(report.StartedAt).Round(time.Millisecond), report.Summary()))
}
