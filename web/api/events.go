package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

type eventJSON struct {
	EventID    string         `json:"event_id"`
	Provider   string         `json:"provider"`
	ContactID  *string        `json:"contact_id"`
	Revision   *int64         `json:"revision"`
	Outcome    domain.Outcome `json:"outcome"`
	ReceivedAt jsonTime       `json:"received_at"`
	Reason     *string        `json:"reason"`
	ObjectType string         `json:"object_type"`
	ObjectID   *string        `json:"object_id"`
	DeliveryID string         `json:"delivery_id"`
	// With q: the matched words between U+0002 and U+0003.
	Headline *string `json:"headline,omitempty"`
}

// handleEvents answers GET events?provider=&contact_id=&object_type=&object_id=&outcome=&q=.
func (h eventHandlers) handleEvents(w http.ResponseWriter, r *http.Request) {
	f, err := eventFilter(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	listJSON(h, w, r, "events", func(ctx context.Context, p domain.Page) ([]domain.LoggedEvent, string, error) {
		return h.store.EventLog(ctx, tokenTenant(ctx).ID, f, p)
	}, func(e domain.LoggedEvent) eventJSON {
		out := eventJSON{EventID: e.EventID, Provider: e.Provider, ContactID: contactID(e.ObjectType, e.ObjectID),
			Revision: e.Revision, Outcome: e.Outcome, ReceivedAt: jsonTime(e.ReceivedAt), Reason: optionalString(e.Reason),
			ObjectType: e.ObjectType, ObjectID: optionalString(e.ObjectID), DeliveryID: e.DeliveryID}
		if f.Search != "" {
			out.Headline = &e.Headline
		}
		return out
	})
}

func eventFilter(r *http.Request) (domain.EventLogQuery, error) {
	q := r.URL.Query()
	f := domain.EventLogQuery{Provider: q.Get("provider"), ObjectType: q.Get("object_type"), ObjectID: q.Get("object_id"),
		Outcome: domain.Outcome(q.Get("outcome")), Search: strings.TrimSpace(q.Get("q"))}
	if c := q.Get("contact_id"); c != "" {
		if f.ObjectType != "" && f.ObjectType != domain.ContactType {
			return f, domain.Errorf(domain.EINVALID, "contact_id names a contact; it cannot be combined with object_type %q", f.ObjectType)
		}
		if f.ObjectID != "" && f.ObjectID != c {
			return f, domain.Errorf(domain.EINVALID, "contact_id and object_id name different records")
		}
		f.ObjectType, f.ObjectID = domain.ContactType, c
	}
	if f.Outcome != "" && !domain.ValidOutcome(string(f.Outcome)) {
		return f, domain.Errorf(domain.EINVALID, "outcome must be one of %s; got %q", outcomeList(), f.Outcome)
	}
	return f, nil
}

func outcomeList() string {
	names := make([]string, len(domain.Outcomes))
	for i, o := range domain.Outcomes {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// handleStats answers GET stats?provider=.
func (h eventHandlers) handleStats(w http.ResponseWriter, r *http.Request) {
	stats, err := h.store.Stats(r.Context(), tokenTenant(r.Context()).ID, r.URL.Query().Get("provider"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	outcomes := make(map[domain.Outcome]int64, len(domain.Outcomes))
	for _, o := range domain.Outcomes {
		outcomes[o] = stats[o]
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"outcomes": outcomes})
}
