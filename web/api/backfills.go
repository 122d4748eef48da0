package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/web/httpx"
)

// backfillJSON is a backfill job as the API shows it.
type backfillJSON struct {
	ID         int64          `json:"id"`
	Provider   string         `json:"provider"`
	Sweep      bool           `json:"sweep"`
	From       jsonTime       `json:"from"`
	To         jsonTime       `json:"to"`
	ObjectType *string        `json:"object_type"` // null: every object type
	State      pull.JobState  `json:"state"`
	Deliveries int            `json:"deliveries"`
	Events     int            `json:"events"`
	Missed     int            `json:"missed"`
	Outcomes   map[string]int `json:"outcomes"`
	Error      *string        `json:"error"`
	// CancelRequested: a running job was asked to stop and will at its
	// next report.
	CancelRequested bool      `json:"cancel_requested"`
	CreatedBy       string    `json:"created_by"`
	CreatedAt       jsonTime  `json:"created_at"`
	StartedAt       *jsonTime `json:"started_at"`
	FinishedAt      *jsonTime `json:"finished_at"`
}

func newBackfillJSON(j pull.Job) backfillJSON {
	outcomes := j.Outcomes
	if outcomes == nil {
		outcomes = map[string]int{}
	}
	return backfillJSON{ID: j.ID, Provider: j.Provider, Sweep: j.Sweep, From: jsonTime(j.From), To: jsonTime(j.To),
		ObjectType: optionalString(j.ObjectType), State: j.State, Deliveries: j.Deliveries, Events: j.Events,
		Missed: j.Missed, Outcomes: outcomes, Error: optionalString(j.Error), CancelRequested: j.CancelRequested, CreatedBy: j.CreatedBy,
		CreatedAt: jsonTime(j.CreatedAt), StartedAt: optionalNonZeroTime(j.StartedAt), FinishedAt: optionalNonZeroTime(j.FinishedAt)}
}

// maxBackfillRequest bounds a backfill request; it holds two short fields.
const maxBackfillRequest = 4 << 10

// backfillProvider reads the {provider} of the request's tenant; it
// answers 404 and returns false when there is none.
func (h backfillHandlers) backfillProvider(w http.ResponseWriter, r *http.Request) (domain.ProviderSummary, bool) {
	p, err := h.store.ProviderSummary(r.Context(), tokenTenant(r.Context()).ID, httpx.PathParam(r, "provider"))
	if err != nil {
		h.fail(w, r, err)
		return p, false
	}
	return p, true
}

// backfillOf reads the {id} job of provider p; a job of another provider
// is not found, as is one of another tenant.
func (h backfillHandlers) backfillOf(w http.ResponseWriter, r *http.Request, p domain.ProviderSummary) (pull.Job, bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	var job pull.Job
	if err == nil && id > 0 {
		job, err = h.store.Backfill(r.Context(), p.TenantID, id)
	} else {
		err = domain.Errorf(domain.ENOTFOUND, "backfill job not found")
	}
	if err == nil && job.ProviderID != p.ID {
		err = domain.Errorf(domain.ENOTFOUND, "backfill job %d of provider %s not found", id, p.Name)
	}
	if err != nil {
		h.fail(w, r, err)
		return job, false
	}
	return job, true
}

// backfillSince reads "since": a string ("72h", "72") or a number of
// whole hours (72).
func backfillSince(raw json.RawMessage) (time.Duration, error) {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 0 && s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			s = ""
		}
	} else if s == "null" {
		s = ""
	}
	return pull.ParseSince(s)
}

// handleStartBackfill answers POST providers/{provider}/backfills:
// {"since": "72h", "object_type": "contact"} queues a job over the last
// since (202 with the job). Whether the provider has API credentials is
// the runner's to find out: it fails the job saying so.
func (h backfillHandlers) handleStartBackfill(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Since      json.RawMessage `json:"since"`
		ObjectType string          `json:"object_type"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBackfillRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		httpx.WriteError(w, http.StatusBadRequest, `body must be a JSON object such as {"since": "72h", "object_type": "contact"}; `+
			`since is required (a duration or whole hours, at most 90 days), object_type is optional (every object type of the provider's scopes)`)
		return
	}
	since, err := backfillSince(req.Since)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, ok := h.backfillProvider(w, r)
	if !ok {
		return
	}
	now := time.Now()
	job, err := h.store.StartBackfill(r.Context(), p.TenantID, p.ID, now.Add(-since), now, req.ObjectType, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, newBackfillJSON(job))
}

// handleBackfills answers GET providers/{provider}/backfills: the newest
// ?limit= jobs, newest first. The list is not paged: no next_cursor.
func (h backfillHandlers) handleBackfills(w http.ResponseWriter, r *http.Request) {
	pg, err := page(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, ok := h.backfillProvider(w, r)
	if !ok {
		return
	}
	jobs, err := h.store.Backfills(r.Context(), p.TenantID, p.ID, pg.Limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]backfillJSON, len(jobs))
	for i, j := range jobs {
		out[i] = newBackfillJSON(j)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"backfills": out})
}

// handleBackfill answers GET providers/{provider}/backfills/{id}.
func (h backfillHandlers) handleBackfill(w http.ResponseWriter, r *http.Request) {
	p, ok := h.backfillProvider(w, r)
	if !ok {
		return
	}
	if job, ok := h.backfillOf(w, r, p); ok {
		httpx.WriteJSON(w, http.StatusOK, newBackfillJSON(job))
	}
}

// handleCancelBackfill answers POST providers/{provider}/backfills/{id}/cancel
// with the job: a queued one cancelled, a running one asked to stop; 409
// for one that ended.
func (h backfillHandlers) handleCancelBackfill(w http.ResponseWriter, r *http.Request) {
	p, ok := h.backfillProvider(w, r)
	if !ok {
		return
	}
	job, ok := h.backfillOf(w, r, p)
	if !ok {
		return
	}
	job, err := h.store.CancelBackfill(r.Context(), p.TenantID, job.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newBackfillJSON(job))
}
