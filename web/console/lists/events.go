package lists

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// HandleEventLog shows one page of the event log, newest first. Filters
// the operator got wrong, and searches too broad to finish in time, are
// explained above the form's results rather than as an error page.
func (h Pages) HandleEventLog(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.Console.Membership(r).Tenant
	values := r.URL.Query()
	f := views.EventLogFilters{
		Provider:   values.Get("provider"),
		ObjectType: values.Get("type"),
		ObjectID:   strings.TrimSpace(values.Get("record")),
		Outcome:    values.Get("outcome"),
		From:       values.Get("from"),
		To:         values.Get("to"),
		Contains:   strings.TrimSpace(values.Get("contains")),
		Search:     strings.TrimSpace(values.Get("q")),
	}
	p := views.EventLogPage{Filters: f}
	var err error
	if p.Choices, err = h.Store.EventLogChoices(ctx, t.ID); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	page := listPage(values)
	base := "/t/" + t.Slug + "/events"
	q, err := eventLogQuery(f)
	if err == nil {
		var info domain.PageInfo
		p.Events, info, err = h.Store.EventLogPage(ctx, t.ID, q, page)
		p.Pages = pages(page, info, len(p.Events), func(cursor, before string) string {
			return base + withPosition(eventLogValues(f), values.Get("limit"), cursor, before)
		})
	}
	status, shown := listStatus(err)
	if !shown {
		h.Console.Error(w, r, err)
		return
	}
	if err != nil {
		p.Error = domain.ErrorMessage(err)
	}
	h.Console.Render(w, r, status, views.EventLogView(h.Console.Layout(r, "Event history", "events"), p))
}

// eventLogQuery reads the filters into a query. Times are datetime-local
// values in UTC; "to" includes the whole minute (or second) it names.
func eventLogQuery(f views.EventLogFilters) (domain.EventLogQuery, error) {
	q := domain.EventLogQuery{Provider: f.Provider, ObjectType: f.ObjectType, ObjectID: f.ObjectID,
		Outcome: domain.Outcome(f.Outcome), Search: f.Search}
	// Text that is not UTF-8 is refused here, naming the field, before
	// PostgreSQL could refuse it with its own words.
	if err := domain.ValidateSearch(q.Search); err != nil {
		return q, err
	}
	var err error
	if q.From, q.Before, err = ParseLocalRange(f.From, f.To); err != nil {
		return q, err
	}
	if f.Contains != "" {
		q.Contains = json.RawMessage(f.Contains)
	}
	return q, q.Validate()
}

// eventLogValues are the filters as a page link's query values.
func eventLogValues(f views.EventLogFilters) url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"provider", f.Provider}, {"type", f.ObjectType}, {"record", f.ObjectID},
		{"outcome", f.Outcome}, {"from", f.From}, {"to", f.To}, {"contains", f.Contains}, {"q", f.Search}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v
}

// HandleEventDetail shows one event with its raw payload.
func (h Pages) HandleEventDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.Console.Membership(r).Tenant
	deliveryID := chi.URLParam(r, "delivery_id")
	seq, err := strconv.Atoi(chi.URLParam(r, "seq"))
	if err != nil {
		h.Console.Error(w, r, domain.Errorf(domain.ENOTFOUND, "event not found"))
		return
	}
	e, err := h.Store.EventDetail(ctx, t.ID, deliveryID, seq)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, http.StatusOK, views.EventDetailView(h.Console.Layout(r, "Event "+e.EventID, "events"), views.EventDetailPage{Event: e}))
}
