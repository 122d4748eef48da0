package deliveries

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

// replayPageSize is how many jobs the replays page lists at a time;
// previewSize how many deliveries its estimate shows; jobPageSize how
// many of a job's deliveries its page lists.
const (
	replayPageSize = 20
	previewSize    = 20
	jobPageSize    = 50
)

// HandleReplays lists the replay jobs and, with ?estimate=1, counts what
// the filters match and shows the first of them before a job is confirmed.
func (p Pages) HandleReplays(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := p.tenant(r)
	q := r.URL.Query()
	v := views.ReplaysPage{Filters: replayFilters(q)}
	choices, err := p.Store.EventLogChoices(ctx, t.ID)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.Providers = choices.Providers
	var next string
	if v.Jobs, next, err = p.Store.ReplayJobs(ctx, t.ID, domain.Page{Limit: replayPageSize, Cursor: q.Get("cursor")}); err != nil {
		p.Console.Error(w, r, err)
		return
	}
	if next != "" {
		v.NextURL = "/t/" + t.Slug + "/replays?cursor=" + url.QueryEscape(next)
	}
	for i, j := range v.Jobs {
		if j.Active() {
			v.Active = &v.Jobs[i]
		}
	}
	status := http.StatusOK
	if q.Get("estimate") != "" {
		f, err := consoleDeliveryFilter(v.Filters)
		if err == nil {
			v.Estimate, err = p.Store.CountReplayable(ctx, t.ID, f)
			v.Estimated = err == nil
		}
		if err == nil {
			v.Preview, err = p.Store.PreviewReplay(ctx, t.ID, f, previewSize)
		}
		switch {
		case errors.Is(err, domain.ErrReadTimeout):
			status, v.Error = http.StatusServiceUnavailable, domain.ErrReadTimeout.Message
		case domain.ErrorCode(err) == domain.EINVALID:
			status, v.Error = http.StatusBadRequest, domain.ErrorMessage(err)
		case err != nil:
			p.Console.Error(w, r, err)
			return
		}
	}
	p.Console.Render(w, r, status, views.ReplaysView(p.Console.Layout(r, "Replays", "replays"), v))
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
		if f.From, _, err = parseLocalTime("from", v.From); err != nil {
			return f, err
		}
	}
	if v.To != "" {
		to, precision, err := parseLocalTime("to", v.To)
		if err != nil {
			return f, err
		}
		f.Before = to.Add(precision)
	}
	return f, f.Validate()
}

// HandleStartReplay starts a job with the confirmed filters and opens it.
func (p Pages) HandleStartReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := p.tenant(r)
	if err := r.ParseForm(); err != nil {
		p.Console.Error(w, r, domain.Errorf(domain.EINVALID, "the form could not be read"))
		return
	}
	filters := replayFilters(r.PostForm)
	back := "/t/" + t.Slug + "/replays?estimate=1&" + r.PostForm.Encode()
	f, err := consoleDeliveryFilter(filters)
	if err == nil {
		var job domain.ReplayJob
		if job, err = p.Store.StartReplayJob(ctx, t.ID, f, r.PostForm.Get("confirm") != ""); err == nil {
			p.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+views.ReplayJobPath(job.ID), "ok",
				fmt.Sprintf("Replay job %d started for %d deliveries.", job.ID, job.Total))
			return
		}
	}
	if code := domain.ErrorCode(err); code == domain.ECONFLICT || code == domain.EINVALID {
		p.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	p.Console.Error(w, r, err)
}

// HandleReplayJob shows one job with the deliveries it replayed (each
// original and its replay, ?outcome= keeps those with an event of that
// outcome); htmx polls it while the job runs.
func (p Pages) HandleReplayJob(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.ReplayJobID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	job, err := p.Store.ReplayJob(r.Context(), p.tenant(r).ID, id)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	q := r.URL.Query()
	v := views.ReplayJobPage{Job: job, Outcome: q.Get("outcome"), Back: r.URL.RequestURI()}
	list, older, newer, err := p.Store.ReplayJobDeliveries(r.Context(), job, domain.Outcome(v.Outcome),
		domain.Page{Limit: jobPageSize, Cursor: q.Get("cursor"), Before: q.Get("before")})
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.Deliveries, v.Pages = list, pages(r, older, newer, "cursor", "before")
	p.Console.Render(w, r, http.StatusOK, views.ReplayJobView(p.Console.Layout(r, fmt.Sprintf("Replay job %d", id), "replays"), v))
}

// HandleCancelReplay cancels a job and shows it.
func (p Pages) HandleCancelReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := p.tenant(r)
	id, err := httpx.ReplayJobID(r)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	back := "/t/" + t.Slug + views.ReplayJobPath(id)
	job, err := p.Store.CancelReplayJob(ctx, t.ID, id)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		p.Console.RedirectWithFlash(w, r, back, "error", domain.ErrorMessage(err))
		return
	}
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.Console.RedirectWithFlash(w, r, back, "ok", "Replay job cancelled after "+job.Summary()+".")
}
