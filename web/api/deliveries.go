package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/web/httpx"
)

type deliveryBriefJSON struct {
	ID         string   `json:"id"`
	Provider   string   `json:"provider"`
	ReceivedAt jsonTime `json:"received_at"`
	Status     int      `json:"status"`
	Signature  string   `json:"signature"`
	Reason     *string  `json:"reason"`
	EventCount int      `json:"event_count"`
	ReplayOf   *string  `json:"replay_of"`
	Source     string   `json:"source"` // webhook or backfill
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
	// Replays is the first page of the replays' ids, oldest first; the
	// rest are at deliveries/{id}/replays?cursor=ReplaysNextCursor.
	Replays           []string `json:"replays"`
	ReplaysNextCursor *string  `json:"replays_next_cursor"`
}

func newDeliveryBriefJSON(d domain.DeliveryBrief) deliveryBriefJSON {
	return deliveryBriefJSON{ID: d.ID, Provider: d.Provider, ReceivedAt: jsonTime(d.ReceivedAt), Status: d.Status,
		Signature: d.Signature, Reason: optionalString(d.Reason), EventCount: d.EventCount, ReplayOf: optionalString(d.ReplayOf),
		Source: cmp.Or(d.Source, "webhook")}
}

func newDeliveryJSON(d domain.DeliveryDetail) deliveryJSON {
	out := deliveryJSON{deliveryBriefJSON: newDeliveryBriefJSON(d.DeliveryBrief), Method: optionalString(d.Request.Method),
		Path: optionalString(d.Request.Path), Query: optionalString(d.Request.Query), Headers: d.Request.Headers,
		Truncated: d.Request.Truncated, ClientAddress: optionalString(d.Request.ClientAddress),
		Events: make([]deliveryEventJSON, len(d.Events)), Replays: d.Replays,
		ReplaysNextCursor: nextCursor(d.MoreReplays)}
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

// handleDeliveries answers GET deliveries?provider=&status=&outcome=&from=&to=.
func (h deliveryHandlers) handleDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := deliveryFilter(q.Get("provider"), q.Get("status"), q.Get("outcome"), q.Get("from"), q.Get("to"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	listJSON(h, w, r, "deliveries", func(ctx context.Context, p domain.Page) ([]domain.DeliveryBrief, string, error) {
		return h.store.Deliveries(ctx, tokenTenant(ctx).ID, f, p)
	}, newDeliveryBriefJSON)
}

// deliveryFilter reads a delivery filter: status an HTTP status, times
// in RFC 3339, from inclusive and to exclusive.
func deliveryFilter(provider, status, outcome, from, to string) (domain.DeliveryFilter, error) {
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

// handleDelivery answers GET deliveries/{id}.
func (h deliveryHandlers) handleDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := h.store.Delivery(r.Context(), tokenTenant(r.Context()).ID, chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, newDeliveryJSON(d))
}

// handleDeliveryReplays answers GET deliveries/{id}/replays: a page of
// the ids of the deliveries that replayed it, oldest first.
func (h deliveryHandlers) handleDeliveryReplays(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	listJSON(h, w, r, "replays", func(ctx context.Context, p domain.Page) ([]string, string, error) {
		return h.store.DeliveryReplays(ctx, tokenTenant(ctx).ID, id, p)
	}, func(id string) string { return id })
}

// handleReplay answers POST deliveries/{id}/replay with the new
// delivery's id and outcomes, as the webhook of a JSON kind answers.
func (h deliveryHandlers) handleReplay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	orig, err := h.store.Delivery(ctx, tokenTenant(ctx).ID, chi.URLParam(r, "id"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id, results, err := h.replayer.Replay(ctx, orig)
	var limited *replay.LimitedError
	if errors.As(err, &limited) {
		w.Header().Set("Retry-After", strconv.Itoa(replay.RetryAfter(limited.Wait)))
		httpx.WriteError(w, http.StatusTooManyRequests, limited.Error())
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	provider.RespondJSON(w, id, results)
}
