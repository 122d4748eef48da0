package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type replayFilterJSON struct {
	Provider *string         `json:"provider"`
	Status   *int            `json:"status"`
	Outcome  *domain.Outcome `json:"outcome"`
	From     *jsonTime       `json:"from"`
	To       *jsonTime       `json:"to"`
}

type replayJobJSON struct {
	ID         int64            `json:"id"`
	Status     string           `json:"status"`
	Total      int64            `json:"total"`
	Done       int64            `json:"done"`
	Filter     replayFilterJSON `json:"filter"`
	Counts     map[string]int64 `json:"counts"`
	Summary    string           `json:"summary"`
	CreatedBy  string           `json:"created_by"`
	CreatedAt  jsonTime         `json:"created_at"`
	StartedAt  *jsonTime        `json:"started_at"`
	FinishedAt *jsonTime        `json:"finished_at"`
	Error      *string          `json:"error"`
}

func optionalNonZeroTime(t time.Time) *jsonTime {
	if t.IsZero() {
		return nil
	}
	return optionalTime(&t)
}

func newReplayJobJSON(j domain.ReplayJob) replayJobJSON {
	f := replayFilterJSON{Provider: optionalString(j.Filter.Provider), From: optionalNonZeroTime(j.Filter.From),
		To: optionalNonZeroTime(j.Filter.Before)}
	if j.Filter.Status != 0 {
		f.Status = &j.Filter.Status
	}
	if j.Filter.Outcome != "" {
		f.Outcome = &j.Filter.Outcome
	}
	counts := j.Counts
	if counts == nil {
		counts = map[string]int64{}
	}
	return replayJobJSON{ID: j.ID, Status: j.Status, Total: j.Total, Done: j.Done, Filter: f, Counts: counts,
		Summary: j.Summary(), CreatedBy: j.CreatedBy.Name, CreatedAt: jsonTime(j.CreatedAt),
		StartedAt: optionalNonZeroTime(j.StartedAt), FinishedAt: optionalNonZeroTime(j.FinishedAt), Error: optionalString(j.Error)}
}

// maxReplayRequest bounds a replay job request; a filter is small.
const maxReplayRequest = 16 << 10

// handleStartReplay answers POST replays: {"provider", "status",
// "outcome", "from", "to", "confirm"} starts a job (202 with the job;
// above domain.ReplayConfirmAbove deliveries only with "confirm": true),
// and with "dry_run": true only counts what it would replay (200 {"total"}).
func (h replayHandlers) handleStartReplay(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Provider string `json:"provider"`
		Status   int    `json:"status"`
		Outcome  string `json:"outcome"`
		From     string `json:"from"`
		To       string `json:"to"`
		DryRun   bool   `json:"dry_run"`
		Confirm  bool   `json:"confirm"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReplayRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		httpx.WriteError(w, http.StatusBadRequest, `body must be a JSON object such as {"provider": "crm", "status": 200, `+
			`"outcome": "rejected", "from": "2026-11-29T00:00:00Z", "to": "2026-11-30T00:00:00Z", "dry_run": true, "confirm": true}; every field is optional`)
		return
	}
	status := ""
	if req.Status != 0 {
		status = strconv.Itoa(req.Status)
	}
	f, err := deliveryFilter(req.Provider, status, req.Outcome, req.From, req.To)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	tenant := tokenTenant(ctx).ID
	if req.DryRun {
		n, err := h.store.CountReplayable(ctx, tenant, f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"total": n})
		return
	}
	job, err := h.store.StartReplayJob(ctx, tenant, f, req.Confirm)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, newReplayJobJSON(job))
}

// handleReplayJob answers GET replays/{id}.
func (h replayHandlers) handleReplayJob(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.ReplayJobID(r)
	if err == nil {
		var job domain.ReplayJob
		if job, err = h.store.ReplayJob(r.Context(), tokenTenant(r.Context()).ID, id); err == nil {
			httpx.WriteJSON(w, http.StatusOK, newReplayJobJSON(job))
			return
		}
	}
	h.fail(w, r, err)
}

// handleReplayJobs answers GET replays, newest first.
func (h replayHandlers) handleReplayJobs(w http.ResponseWriter, r *http.Request) {
	listJSON(h, w, r, "replays", func(ctx context.Context, p domain.Page) ([]domain.ReplayJob, string, error) {
		return h.store.ReplayJobs(ctx, tokenTenant(ctx).ID, p)
	}, newReplayJobJSON)
}

// handleCancelReplay answers POST replays/{id}/cancel with the job.
func (h replayHandlers) handleCancelReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := httpx.ReplayJobID(r)
	if err == nil {
		var job domain.ReplayJob
		if job, err = h.store.CancelReplayJob(ctx, tokenTenant(ctx).ID, id); err == nil {
			httpx.WriteJSON(w, http.StatusOK, newReplayJobJSON(job))
			return
		}
	}
	h.fail(w, r, err)
}
