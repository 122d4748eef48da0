package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/web/httpx"
)

// destinationJSON is a destination as the API shows it; never its secret.
type destinationJSON struct {
	ID              int64     `json:"id"`
	Kind            string    `json:"kind"`
	URL             *string   `json:"url"`
	NATSURL         *string   `json:"nats_url"`
	Subject         *string   `json:"subject"`
	NATSAuth        *string   `json:"nats_auth"`
	NATSTLSCA       bool      `json:"nats_tls_ca"`
	Provider        *string   `json:"provider"`
	ObjectType      *string   `json:"object_type"`
	Types           []string  `json:"types"`
	Format          string    `json:"format"`
	Filter          *string   `json:"filter"`
	Transform       *string   `json:"transform"`
	MaxInFlight     int       `json:"max_in_flight"`
	Status          string    `json:"status"`
	StatusReason    *string   `json:"status_reason"`
	Cursor          string    `json:"cursor"`
	BehindRetention bool      `json:"behind_retention"`
	Filtered        int64     `json:"filtered"`
	Pending         int       `json:"pending"`
	OldestPendingAt *jsonTime `json:"oldest_pending_at"`
	LagSeconds      *int64    `json:"lag_seconds"`
	CreatedAt       jsonTime  `json:"created_at"`
	LastSuccessAt   *jsonTime `json:"last_success_at"`
}

func newDestinationJSON(d stream.Destination) destinationJSON {
	j := destinationJSON{ID: d.ID, Kind: d.Kind, URL: optionalString(d.URL), NATSURL: optionalString(d.NATSURL),
		Subject: optionalString(d.Subject), NATSAuth: optionalString(d.NATSAuth), NATSTLSCA: d.NATSTLSCA,
		Provider: optionalString(d.Provider), ObjectType: optionalString(d.ObjectType),
		Types: d.Types, Format: d.Format, Filter: optionalString(d.Filter), Transform: optionalString(d.Transform), MaxInFlight: d.MaxInFlight, Status: d.Status, StatusReason: optionalString(d.StatusReason),
		Cursor: stream.FormatCursor(d.Cursor), BehindRetention: d.BehindRetention, Filtered: d.Filtered, Pending: d.Pending, OldestPendingAt: optionalTime(d.Oldest),
		CreatedAt: jsonTime(d.CreatedAt), LastSuccessAt: optionalTime(d.LastSuccess)}
	if d.Oldest != nil {
		lag := max(int64(time.Since(*d.Oldest)/time.Second), 0)
		j.LagSeconds = &lag
	}
	return j
}

type destinationAttemptJSON struct {
	ChangeID    string   `json:"change_id"` // the message's webhook-id: a change's, or an alert event's
	Type        string   `json:"type"`
	AttemptedAt jsonTime `json:"attempted_at"`
	Status      int      `json:"status"`
	Delivered   bool     `json:"delivered"`
	Error       *string  `json:"error"`
	DurationMS  int64    `json:"duration_ms"`
}

func newDestinationAttemptJSON(a stream.DestinationAttempt) destinationAttemptJSON {
	return destinationAttemptJSON{ChangeID: a.ChangeID, Type: a.Type, AttemptedAt: jsonTime(a.At), Status: a.Status,
		Delivered: a.Delivered(), Error: optionalString(a.Error), DurationMS: a.Duration.Milliseconds()}
}

// maxDestinationRequest bounds a destination's request: a URL is at most
// 2 KiB, NATS credentials and certificate authorities some 50 KiB.
const maxDestinationRequest = 64 << 10

// decodeBody reads a JSON object into v, refusing unknown fields and
// anything after it; on an error it answers 400 with example and returns
// false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDestinationRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		httpx.WriteError(w, http.StatusBadRequest, "body must be a JSON object such as "+example)
		return false
	}
	return true
}

// handleCreateDestination answers POST destinations: 201 with the
// destination and its signing secret, shown this once. The API never
// allows private addresses. A kind, when given, must agree with the
// fields; without one the fields imply it (sink.Check).
func (h destinationHandlers) handleCreateDestination(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Kind        string   `json:"kind"`
		URL         string   `json:"url"`
		NATSURL     string   `json:"nats_url"`
		Subject     string   `json:"subject"`
		NATSCreds   string   `json:"nats_creds"`
		NATSNKey    string   `json:"nats_nkey"`
		NATSTLSCA   string   `json:"nats_tls_ca"`
		Provider    string   `json:"provider"`
		ObjectType  string   `json:"object_type"`
		Types       []string `json:"types"`
		Format      string   `json:"format"`
		Filter      string   `json:"filter"`
		Transform   string   `json:"transform"`
		MaxInFlight *int     `json:"max_in_flight"`
	}
	if !decodeBody(w, r, &req, `{"url": "https://hooks.example.com/tidemark", "provider": "crm", "object_type": "contact", `+
		`"types": ["record.*", "alert.*"], "format": "standard", "max_in_flight": 8}, or {"nats_url": "nats://nats.example.com:4222", "subject": "crm.changes", "nats_creds": "<the .creds file>"}`) { // not a provider kind
		return
	}
	nd := stream.NewDestination{Kind: req.Kind, URL: req.URL, NATSURL: req.NATSURL, Subject: req.Subject, Provider: req.Provider,
		ObjectType: req.ObjectType, Types: req.Types, Format: req.Format, Filter: req.Filter, Transform: req.Transform,
		NATS: stream.NATSAuth{Creds: req.NATSCreds, NKey: req.NATSNKey, TLSCA: req.NATSTLSCA}}
	if req.MaxInFlight != nil {
		if *req.MaxInFlight == 0 { // 0 is NewDestination's default, not a value to accept
			h.fail(w, r, domain.Errorf(domain.EINVALID, "max_in_flight must be from 1 to %d, got 0", stream.MaxMaxInFlight))
			return
		}
		nd.MaxInFlight = *req.MaxInFlight
	}
	ctx := r.Context()
	nd, err := sink.Check(ctx, nd)
	if err != nil {
		if d := egress.Detail(err); d != "" { // what the caller is not told
			h.log.InfoContext(ctx, "destination URL refused", "tenant", tokenTenant(ctx).Slug, "detail", d)
		}
		h.fail(w, r, err)
		return
	}
	d, secret, err := h.store.CreateDestination(ctx, tokenTenant(ctx).ID, nd)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, struct {
		destinationJSON
		Secret string `json:"secret"`
	}{newDestinationJSON(d), secret})
}

// handleDestinations answers GET destinations: every destination of the
// tenant, in one page.
func (h destinationHandlers) handleDestinations(w http.ResponseWriter, r *http.Request) {
	ds, err := h.store.Destinations(r.Context(), tokenTenant(r.Context()).ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]destinationJSON, len(ds))
	for i, d := range ds {
		out[i] = newDestinationJSON(d)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"destinations": out, "next_cursor": nil})
}

// handleDestination answers GET destinations/{id}.
func (h destinationHandlers) handleDestination(w http.ResponseWriter, r *http.Request) {
	h.answerDestination(w, r, nil)
}

// answerDestination runs change, when given, on destination {id}, then
// answers with the destination.
func (h destinationHandlers) answerDestination(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, tenant, id int64) error) {
	ctx := r.Context()
	tenant := tokenTenant(ctx).ID
	id, err := httpx.DestinationID(r)
	if err == nil && change != nil {
		err = change(ctx, tenant, id)
	}
	if err == nil {
		var d stream.Destination
		if d, err = h.store.Destination(ctx, tenant, id); err == nil {
			httpx.WriteJSON(w, http.StatusOK, newDestinationJSON(d))
			return
		}
	}
	h.fail(w, r, err)
}

// handleDestinationAttempts answers GET destinations/{id}/attempts, newest
// first.
func (h destinationHandlers) handleDestinationAttempts(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.DestinationID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	listJSON(h, w, r, "attempts", func(ctx context.Context, p domain.Page) ([]stream.DestinationAttempt, string, error) {
		return h.store.DestinationAttempts(ctx, tokenTenant(ctx).ID, id, p)
	}, newDestinationAttemptJSON)
}

// handleRotateDestination answers POST destinations/{id}/rotate with the
// new secret; the previous one signs too for stream.DestinationSecretGrace.
func (h destinationHandlers) handleRotateDestination(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := httpx.DestinationID(r)
	if err == nil {
		var secret string
		if secret, err = h.store.RotateDestinationSecret(ctx, tokenTenant(ctx).ID, id); err == nil {
			w.Header().Set("Cache-Control", "no-store")
			httpx.WriteJSON(w, http.StatusOK, map[string]string{"secret": secret})
			return
		}
	}
	h.fail(w, r, err)
}

func (h destinationHandlers) handlePauseDestination(w http.ResponseWriter, r *http.Request) {
	h.answerDestination(w, r, h.store.PauseDestination)
}

func (h destinationHandlers) handleResumeDestination(w http.ResponseWriter, r *http.Request) {
	h.answerDestination(w, r, h.store.ResumeDestination)
}

// handleRewindDestination answers POST destinations/{id}/rewind
// {"after": cursor}: every change after the cursor is sent again ("" is
// the start of the feed).
func (h destinationHandlers) handleRewindDestination(w http.ResponseWriter, r *http.Request) {
	var req struct {
		After *string `json:"after"`
	}
	if !decodeBody(w, r, &req, `{"after": "c1_42"}, a cursor of the change feed; "" for its start`) {
		return
	}
	if req.After == nil {
		httpx.WriteError(w, http.StatusBadRequest, `after is required: a cursor of the change feed, or "" for its start`)
		return
	}
	position, err := stream.ParseCursor(*req.After)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.answerDestination(w, r, func(ctx context.Context, tenant, id int64) error {
		return h.store.RewindDestination(ctx, tenant, id, position)
	})
}

// handleDeleteDestination answers DELETE destinations/{id} with 204.
func (h destinationHandlers) handleDeleteDestination(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := httpx.DestinationID(r)
	if err == nil {
		if err = h.store.DeleteDestination(ctx, tokenTenant(ctx).ID, id); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	h.fail(w, r, err)
}
