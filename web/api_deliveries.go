package web

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// The delivery inspector and replays of the JSON API (docs/contract.md
// section 7.13).

type deliveryBriefJSON struct {
	ID         string  `json:"id"`
	Provider   string  `json:"provider"`
	ReceivedAt apiTime `json:"received_at"`
	Status     int     `json:"status"`
	Signature  string  `json:"signature"`
	Reason     *string `json:"reason"`
	EventCount int     `json:"event_count"`
	ReplayOf   *string `json:"replay_of"`
}

type deliveryEventJSON struct {
	EventID    string         `json:"event_id"`
	Outcome    domain.Outcome `json:"outcome"`
	Reason     *string        `json:"reason"`
	ObjectType string         `json:"object_type"`
	ObjectID   *string        `json:"object_id"`
}

type deliveryJSON struct {
	deliveryBriefJSON
	Method        *string             `json:"method"`
	Path          *string             `json:"path"`
	Query         *string             `json:"query"`
	Headers       map[string][]string `json:"headers"`
	Truncated     bool                `json:"truncated"`
	ClientAddress *string             `json:"client_address"`
	// Body is the body as a string when it is valid UTF-8 (BodyEncoding
	// "utf-8"), else its base64 ("base64"); both null when it was not kept.
	Body         *string             `json:"body"`
	BodyEncoding *string             `json:"body_encoding"`
	Events       []deliveryEventJSON `json:"events"`
	Replays      []string            `json:"replays"`
}

func newDeliveryBriefJSON(d domain.DeliveryBrief) deliveryBriefJSON {
	return deliveryBriefJSON{ID: d.ID, Provider: d.Provider, ReceivedAt: apiTime(d.ReceivedAt), Status: d.Status,
		Signature: d.Signature, Reason: optionalString(d.Reason), EventCount: d.EventCount, ReplayOf: optionalString(d.ReplayOf)}
}

func newDeliveryJSON(d domain.DeliveryDetail) deliveryJSON {
	out := deliveryJSON{deliveryBriefJSON: newDeliveryBriefJSON(d.DeliveryBrief), Method: optionalString(d.Request.Method),
		Path: optionalString(d.Request.Path), Query: optionalString(d.Request.Query), Headers: d.Request.Headers,
		Truncated: d.Request.Truncated, ClientAddress: optionalString(d.Request.ClientAddress),
		Events: make([]deliveryEventJSON, len(d.Events)), Replays: d.Replays}
	if out.Headers == nil {
		out.Headers = map[string][]string{}
	}
	if out.Replays == nil {
		out.Replays = []string{}
	}
	if d.BodyKept() {
		body, encoding := string(d.Body), "utf-8"
		if !utf8.Valid(d.Body) {
			body, encoding = base64.StdEncoding.EncodeToString(d.Body), "base64"
		}
		out.Body, out.BodyEncoding = &body, &encoding
	}
	for i, e := range d.Events {
		out.Events[i] = deliveryEventJSON{EventID: e.EventID, Outcome: e.Outcome, Reason: optionalString(e.Reason),
			ObjectType: e.ObjectType, ObjectID: optionalString(e.ObjectID)}
	}
	return out
}

// handleDeliveriesAPI answers GET deliveries?provider=&status=&outcome=&from=&to=.
func (s *Server) handleDeliveriesAPI(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := apiDeliveryFilter(q.Get("provider"), q.Get("status"), q.Get("outcome"), q.Get("from"), q.Get("to"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, next, err := s.deliveries.Deliveries(r.Context(), apiTenant(r.Context()).ID, f, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]deliveryBriefJSON, len(list))
	for i, d := range list {
		out[i] = newDeliveryBriefJSON(d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": out, "next_cursor": nextCursor(next)})
}

// apiDeliveryFilter reads a delivery filter: status an HTTP status, times
// in RFC 3339, from inclusive and to exclusive.
func apiDeliveryFilter(provider, status, outcome, from, to string) (domain.DeliveryFilter, error) {
	f := domain.DeliveryFilter{Provider: provider, Outcome: domain.Outcome(outcome)}
	if status != "" {
		n, err := strconv.Atoi(status)
		if err != nil {
			return f, domain.Errorf(domain.EINVALID, "status must be an HTTP status such as 200, got %q", status)
		}
		f.Status = n
	}
	for _, t := range []struct {
		name, value string
		to          *time.Time
	}{{"from", from, &f.From}, {"to", to, &f.Before}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.value)
		if err != nil {
			return f, domain.Errorf(domain.EINVALID, "%s must be a time in RFC 3339, such as 2026-11-29T10:00:00Z; got %q", t.name, t.value)
		}
		*t.to = v
	}
	if f.Outcome != "" && !domain.ValidOutcome(outcome) {
		return f, domain.Errorf(domain.EINVALID, "outcome must be one of %s; got %q", outcomeList(), outcome)
	}
	return f, f.Validate()
}

// handleDeliveryAPI answers GET deliveries/{id}.
func (s *Server) handleDeliveryAPI(w http.ResponseWriter, r *http.Request) {
	d, err := s.deliveries.Delivery(r.Context(), apiTenant(r.Context()).ID, chi.URLParam(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newDeliveryJSON(d))
}

// handleReplayAPI answers POST deliveries/{id}/replay with the new
// delivery's id and outcomes, as the webhook of a JSON kind answers.
func (s *Server) handleReplayAPI(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	orig, err := s.deliveries.Delivery(ctx, apiTenant(ctx).ID, chi.URLParam(r, "id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, results, err := s.replay(ctx, orig, nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	provider.RespondJSON(w, id, results)
}

type replayFilterJSON struct {
	Provider *string         `json:"provider"`
	Status   *int            `json:"status"`
	Outcome  *domain.Outcome `json:"outcome"`
	From     *apiTime        `json:"from"`
	To       *apiTime        `json:"to"`
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
	CreatedAt  apiTime          `json:"created_at"`
	StartedAt  *apiTime         `json:"started_at"`
	FinishedAt *apiTime         `json:"finished_at"`
	Error      *string          `json:"error"`
}

func optionalNonZeroTime(t time.Time) *apiTime {
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
		Summary: j.Summary(), CreatedBy: j.CreatedBy.Name, CreatedAt: apiTime(j.CreatedAt),
		StartedAt: optionalNonZeroTime(j.StartedAt), FinishedAt: optionalNonZeroTime(j.FinishedAt), Error: optionalString(j.Error)}
}

// maxReplayRequest bounds a replay job request; a filter is small.
const maxReplayRequest = 16 << 10

// handleStartReplayAPI answers POST replays: {"provider", "status",
// "outcome", "from", "to"} starts a job (202 with the job), and with
// "dry_run": true only counts what it would replay (200 {"total"}).
func (s *Server) handleStartReplayAPI(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Provider string `json:"provider"`
		Status   int    `json:"status"`
		Outcome  string `json:"outcome"`
		From     string `json:"from"`
		To       string `json:"to"`
		DryRun   bool   `json:"dry_run"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReplayRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		writeError(w, http.StatusBadRequest, `body must be a JSON object such as {"provider": "crm", "status": 200, `+
			`"outcome": "rejected", "from": "2026-11-29T00:00:00Z", "to": "2026-11-30T00:00:00Z", "dry_run": true}; every field is optional`)
		return
	}
	status := ""
	if req.Status != 0 {
		status = strconv.Itoa(req.Status)
	}
	f, err := apiDeliveryFilter(req.Provider, status, req.Outcome, req.From, req.To)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	tenant := apiTenant(ctx).ID
	if req.DryRun {
		n, err := s.replays.CountReplayable(ctx, tenant, f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"total": n})
		return
	}
	job, err := s.replays.StartReplayJob(ctx, tenant, f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, newReplayJobJSON(job))
}

// replayJobID reads {id}; no job can have an id that is not a positive
// integer.
func replayJobID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, domain.Errorf(domain.ENOTFOUND, "replay job not found")
	}
	return id, nil
}

// handleReplayJobAPI answers GET replays/{id}.
func (s *Server) handleReplayJobAPI(w http.ResponseWriter, r *http.Request) {
	id, err := replayJobID(r)
	if err == nil {
		var job domain.ReplayJob
		if job, err = s.replays.ReplayJob(r.Context(), apiTenant(r.Context()).ID, id); err == nil {
			writeJSON(w, http.StatusOK, newReplayJobJSON(job))
			return
		}
	}
	s.fail(w, r, err)
}

// handleReplayJobsAPI answers GET replays, newest first.
func (s *Server) handleReplayJobsAPI(w http.ResponseWriter, r *http.Request) {
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	jobs, next, err := s.replays.ReplayJobs(r.Context(), apiTenant(r.Context()).ID, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]replayJobJSON, len(jobs))
	for i, j := range jobs {
		out[i] = newReplayJobJSON(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"replays": out, "next_cursor": nextCursor(next)})
}

// handleCancelReplayAPI answers POST replays/{id}/cancel with the job.
func (s *Server) handleCancelReplayAPI(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := replayJobID(r)
	if err == nil {
		var job domain.ReplayJob
		if job, err = s.replays.CancelReplayJob(ctx, apiTenant(ctx).ID, id); err == nil {
			writeJSON(w, http.StatusOK, newReplayJobJSON(job))
			return
		}
	}
	s.fail(w, r, err)
}
