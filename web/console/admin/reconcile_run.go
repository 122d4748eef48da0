package admin

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

// HandleRunReconciliation runs the reconciliation now, as tidemark audit
// does, stores its report (audited) and shows it: admins only, like the
// page.
func (h Pages) HandleRunReconciliation(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), reconcileRunTimeout)
	defer cancel()
	report, err := h.Store.RunReconciliation(ctx)
	switch {
	case domain.ErrorCode(err) == domain.ECONFLICT:
		h.Console.RedirectWithFlash(w, r, ReconciliationPath, "error", domain.ErrorMessage(err))
		return
	case ctx.Err() == context.DeadlineExceeded:
		h.Console.RedirectWithFlash(w, r, ReconciliationPath, "error", fmt.Sprintf(
			"The reconciliation did not finish within %s: run tidemark audit on a server instead.", reconcileRunTimeout))
		return
	case err != nil:
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "reconciliation run", "report", report.Summary(), "by", h.Console.User(r).Email)
	kind := "ok"
	if report.Total() > 0 {
		kind = "error"
	}
	h.Console.RedirectWithFlash(w, r, ReconciliationPath, kind, fmt.Sprintf("Reconciliation finished in %s: %s.",
		report.FinishedAt.Sub(report.StartedAt).Round(time.Millisecond), report.Summary()))
}
