package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/lists"
	"github.com/tidemark/tidemark/web/httpx"
)

// handleDeliveryPage shows one delivery with its request, body and events.
func (h deliveryPages) handleDeliveryPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.deliveries.Delivery(r.Context(), currentTenant(r.Context()).ID, chi.URLParam(r, "id"))
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	p := views.DeliveryPage{Delivery: d}
	if cursor := r.URL.Query().Get("replays"); cursor != "" {
		// A later page of the replays, in place of the first.
		ctx := r.Context()
		p.Delivery.Replays, p.Delivery.MoreReplays, err = h.deliveries.DeliveryReplays(ctx, currentTenant(ctx).ID, d.ID,
			domain.Page{Cursor: cursor})
		if err != nil {
			h.consoleError(w, r, err)
			return
		}
	}
	if err := d.Replayable(); err != nil {
		p.NotReplayable = domain.ErrorMessage(err)
	}
	h.render(w, r, http.StatusOK, views.DeliveryView(h.layout(r, "Delivery "+d.ID, "events"), p))
}

// handleReplayDelivery replays one delivery and shows the new one.
func (h deliveryPages) handleReplayDelivery(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	back := "/t/" + t.Slug + views.DeliveryPath(chi.URLParam(r, "id"))
	orig, err := h.deliveries.Delivery(ctx, t.ID, chi.URLParam(r, "id"))
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	id, results, err := h.replayer.Replay(ctx, orig)
	var limited *replay.LimitedError
	if errors.As(err, &limited) {
		h.redirectWithFlash(w, r, back, "error", limited.Error())
		return
	}
	if code := domain.ErrorCode(err); code == domain.ECONFLICT || code == domain.ENOTFOUND {
		h.redirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	msg := "Replayed as this delivery"
	if counts := domain.CountsText(domain.CountResults(results)); counts != "" {
		msg += ": " + counts
	}
	h.redirectWithFlash(w, r, "/t/"+t.Slug+views.DeliveryPath(id), "ok", msg+".")
}

// replayPageSize is how many jobs the replays page lists at a time.
const replayPageSize = 20

// handleReplaysPage lists the replay jobs and, with ?estimate=1, counts
// what the filters match before a job is confirmed.
func (h deliveryPages) handleReplaysPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	q := r.URL.Query()
	p := views.ReplaysPage{Filters: replayFilters(q)}
	choices, err := h.events.EventLogChoices(ctx, t.ID)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	p.Providers = choices.Providers
	var next string
	if p.Jobs, next, err = h.replays.ReplayJobs(ctx, t.ID, domain.Page{Limit: replayPageSize, Cursor: q.Get("cursor")}); err != nil {
		h.consoleError(w, r, err)
		return
	}
	if next != "" {
		p.NextURL = "/t/" + t.Slug + "/replays?cursor=" + url.QueryEscape(next)
	}
	for i, j := range p.Jobs {
		if j.Active() {
			p.Active = &p.Jobs[i]
		}
	}
	status := http.StatusOK
	if q.Get("estimate") != "" {
		f, err := consoleDeliveryFilter(p.Filters)
		if err == nil {
			p.Estimate, err = h.replays.CountReplayable(ctx, t.ID, f)
			p.Estimated = err == nil
		}
		switch {
		case errors.Is(err, domain.ErrReadTimeout):
			status, p.Error = http.StatusServiceUnavailable, domain.ErrReadTimeout.Message
		case domain.ErrorCode(err) == domain.EINVALID:
			status, p.Error = http.StatusBadRequest, domain.ErrorMessage(err)
		case err != nil:
			h.consoleError(w, r, err)
			return
		}
	}
	h.render(w, r, status, views.ReplaysView(h.layout(r, "Replays", "replays"), p))
}

func replayFilters(v url.Values) views.ReplayFilters {
	return views.ReplayFilters{Provider: v.Get("provider"), Status: v.Get("status"), Outcome: v.Get("outcome"),
		From: v.Get("from"), To: v.Get("to")}
}

// consoleDeliveryFilter reads the form's filters: times are datetime-local
// values in UTC, and "to" includes the whole minute (or second) it names.
func consoleDeliveryFilter(v views.ReplayFilters) (domain.DeliveryFilter, error) {
	f := domain.DeliveryFilter{Provider: v.Provider, Outcome: domain.Outcome(v.Outcome)}
	if v.Status != "" {
		n, err := strconv.Atoi(v.Status)
		if err != nil {
			return f, domain.Errorf(domain.EINVALID, "status must be an HTTP status such as 200, got %q", v.Status)
		}
		f.Status = n
	}
	var err error
	if v.From != "" {
		if f.From, _, err = lists.ParseLocalTime("from", v.From); err != nil {
			return f, err
		}
	}
	if v.To != "" {
		to, precision, err := lists.ParseLocalTime("to", v.To)
		if err != nil {
			return f, err
		}
		f.Before = to.Add(precision)
	}
	return f, f.Validate()
}

// handleStartReplay starts a job with the confirmed filters and opens it.
func (h deliveryPages) handleStartReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	if err := r.ParseForm(); err != nil {
		h.consoleError(w, r, domain.Errorf(domain.EINVALID, "the form could not be read"))
		return
	}
	filters := replayFilters(r.PostForm)
	back := "/t/" + t.Slug + "/replays?estimate=1&" + r.PostForm.Encode()
	f, err := consoleDeliveryFilter(filters)
	if err == nil {
		var job domain.ReplayJob
		if job, err = h.replays.StartReplayJob(ctx, t.ID, f, r.PostForm.Get("confirm") != ""); err == nil {
			h.redirectWithFlash(w, r, "/t/"+t.Slug+views.ReplayJobPath(job.ID), "ok",
				fmt.Sprintf("Replay job %d started for %d deliveries.", job.ID, job.Total))
			return
		}
	}
	if code := domain.ErrorCode(err); code == domain.ECONFLICT || code == domain.EINVALID {
		h.redirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	h.consoleError(w, r, err)
}

// handleReplayJobPage shows one job; htmx polls it while the job runs.
func (h deliveryPages) handleReplayJobPage(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.ReplayJobID(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	job, err := h.replays.ReplayJob(r.Context(), currentTenant(r.Context()).ID, id)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.ReplayJobView(h.layout(r, fmt.Sprintf("Replay job %d", id), "replays"),
		views.ReplayJobPage{Job: job}))
}

// handleCancelReplay cancels a job and shows it.
func (h deliveryPages) handleCancelReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	id, err := httpx.ReplayJobID(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	back := "/t/" + t.Slug + views.ReplayJobPath(id)
	job, err := h.replays.CancelReplayJob(ctx, t.ID, id)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		h.redirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.redirectWithFlash(w, r, back, "ok", "Replay job cancelled after "+job.Summary()+".")
}
