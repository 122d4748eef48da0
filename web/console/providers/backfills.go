package providers

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/views"
)

// backfillsShown is how many jobs a provider page lists.
const backfillsShown = 10

// backfillSection is the provider page's backfill: the form and the
// provider's latest jobs.
func (h Pages) backfillSection(r *http.Request, p domain.ProviderSummary, scopes []domain.Scope) (views.BackfillSection, error) {
	jobs, err := h.Store.Backfills(r.Context(), p.TenantID, p.ID, backfillsShown)
	v := views.BackfillSection{Since: views.DefaultBackfillSince, Jobs: jobs}
	for _, sc := range scopes {
		if !slices.Contains(v.ObjectTypes, sc.ObjectType) {
			v.ObjectTypes = append(v.ObjectTypes, sc.ObjectType)
		}
	}
	return v, err
}

func (h Pages) backfillURL(r *http.Request, name string) string {
	return h.providerURL(r, name) + "#backfill"
}

// HandleStartBackfill queues a backfill of the provider over the form's
// window and shows the provider page with it. A window the form cannot
// take comes back as a message.
func (h Pages) HandleStartBackfill(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	back := h.backfillURL(r, p.Name)
	since, err := pull.ParseSince(r.PostFormValue("since"))
	if err != nil {
		h.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	now := h.Now()
	job, err := h.Store.StartBackfill(r.Context(), p.TenantID, p.ID, now.Add(-since), now, r.PostFormValue("object_type"), false)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		// The provider's job is queued or running: the message names it.
		h.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Log.InfoContext(r.Context(), "backfill queued", "tenant", h.tenant(r).Slug, "provider", p.Name, "job", job.ID, "by", by(r))
	h.Console.RedirectWithFlash(w, r, back, "ok", fmt.Sprintf("Backfill %d queued: %s of changes, up to now.", job.ID,
		since.Round(time.Second)))
}

// HandleCancelBackfill cancels a queued job of the provider, or asks a
// running one to stop; one that ended is said so.
func (h Pages) HandleCancelBackfill(w http.ResponseWriter, r *http.Request) {
	p, _, ok := h.currentProvider(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	var job pull.Job
	if err == nil && id > 0 {
		job, err = h.Store.Backfill(ctx, p.TenantID, id)
	} else {
		err = domain.Errorf(domain.ENOTFOUND, "backfill job not found")
	}
	if err == nil && job.ProviderID != p.ID {
		err = domain.Errorf(domain.ENOTFOUND, "backfill job %d of provider %s not found", id, p.Name)
	}
	if err == nil {
		job, err = h.Store.CancelBackfill(ctx, p.TenantID, id)
	}
	back := h.backfillURL(r, p.Name)
	switch {
	case domain.ErrorCode(err) == domain.ECONFLICT:
		h.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
	case err != nil:
		h.Console.Error(w, r, err)
	case job.State == pull.Cancelled:
		h.Console.RedirectWithFlash(w, r, back, "ok", fmt.Sprintf("Backfill %d cancelled before it started.", id))
	default:
		h.Console.RedirectWithFlash(w, r, back, "ok", fmt.Sprintf("Backfill %d will stop after the page it is pulling; what it pulled so far stays.", id))
	}
}
