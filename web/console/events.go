package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// eventLogPageSize is how many events one page of history shows; ?limit=
// asks for fewer or more, up to domain.MaxPageLimit.
const eventLogPageSize = 50

// handleEventLog shows one page of the event log, newest first. Filters
// the operator got wrong, and searches too broad to finish in time, are
// explained above the form's results rather than as an error page.
func (h eventPages) handleEventLog(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
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
	if p.Choices, err = h.events.EventLogChoices(ctx, t.ID); err != nil {
		h.consoleError(w, r, err)
		return
	}
	page := consolePage(values, eventLogPageSize)
	base := "/t/" + t.Slug + "/events"
	if page.Cursor != "" {
		p.FirstURL = base + eventLogQueryString(f, values.Get("limit"), "")
	}

	q, err := eventLogQuery(f)
	if err == nil {
		var next string
		p.Events, next, err = h.events.EventLog(ctx, t.ID, q, page)
		if next != "" {
			p.NextURL = base + eventLogQueryString(f, values.Get("limit"), next)
		}
	}
	status, shown := listStatus(err)
	if !shown {
		h.consoleError(w, r, err)
		return
	}
	if err != nil {
		p.Error = domain.ErrorMessage(err)
	}
	h.render(w, r, status, views.EventLogView(h.layout(r, "Event history", "events"), p))
}

// listStatus is the status of a console list page whose read ended with
// err; shown is false for errors the page cannot explain above its form.
func listStatus(err error) (status int, shown bool) {
	switch {
	case err == nil:
		return http.StatusOK, true
	case errors.Is(err, domain.ErrReadTimeout):
		return http.StatusServiceUnavailable, true
	case domain.ErrorCode(err) == domain.EINVALID:
		return http.StatusBadRequest, true
	}
	return 0, false
}

// consolePage is the page a console list asks for: its cursor, and
// ?limit= when it is a positive number, else size.
func consolePage(values url.Values, size int) domain.Page {
	page := domain.Page{Limit: size, Cursor: values.Get("cursor")}
	if n, err := strconv.Atoi(values.Get("limit")); err == nil && n > 0 {
		page.Limit = n
	}
	return page
}

// eventLogQuery reads the filters into a query. Times are datetime-local
// values in UTC; "to" includes the whole minute (or second) it names.
func eventLogQuery(f views.EventLogFilters) (domain.EventLogQuery, error) {
	q := domain.EventLogQuery{Provider: f.Provider, ObjectType: f.ObjectType, ObjectID: f.ObjectID,
		Outcome: domain.Outcome(f.Outcome), Search: f.Search}
	var err error
	if q.From, q.Before, err = parseLocalRange(f.From, f.To); err != nil {
		return q, err
	}
	if f.Contains != "" {
		q.Contains = json.RawMessage(f.Contains)
	}
	return q, q.Validate()
}

// parseLocalRange reads the from and to fields of a console filter form
// (datetime-local, UTC; either may be empty) as [from, before): "to"
// includes the whole minute (or second) it names.
func parseLocalRange(from, to string) (start, before time.Time, err error) {
	if from != "" {
		if start, _, err = parseLocalTime("from", from); err != nil {
			return start, before, err
		}
	}
	if to != "" {
		end, precision, err := parseLocalTime("to", to)
		if err != nil {
			return start, before, err
		}
		before = end.Add(precision)
	}
	return start, before, nil
}

// parseLocalTime reads a datetime-local value as UTC and says how precise
// it was.
func parseLocalTime(field, v string) (time.Time, time.Duration, error) {
	for _, layout := range []struct {
		layout    string
		precision time.Duration
	}{{"2006-01-02T15:04", time.Minute}, {"2006-01-02T15:04:05", time.Second}, {"2006-01-02T15:04:05.999999999", time.Nanosecond}} {
		if t, err := time.ParseInLocation(layout.layout, v, time.UTC); err == nil {
			return t, layout.precision, nil
		}
	}
	return time.Time{}, 0, domain.Errorf(domain.EINVALID, "%q is not a date and time for %q; use the form 2026-11-29T10:00", v, field)
}

// eventLogQueryString carries the filters (and the page size and cursor,
// when set) into a page link.
func eventLogQueryString(f views.EventLogFilters, limit, cursor string) string {
	v := url.Values{}
	for _, kv := range [][2]string{{"provider", f.Provider}, {"type", f.ObjectType}, {"record", f.ObjectID},
		{"outcome", f.Outcome}, {"from", f.From}, {"to", f.To}, {"contains", f.Contains}, {"q", f.Search}, {"limit", limit}, {"cursor", cursor}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// handleEventDetail shows one event with its raw payload.
func (h eventPages) handleEventDetail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	deliveryID := chi.URLParam(r, "delivery_id")
	seq, err := strconv.Atoi(chi.URLParam(r, "seq"))
	if err != nil {
		h.consoleError(w, r, domain.Errorf(domain.ENOTFOUND, "event not found"))
		return
	}
	e, err := h.events.EventDetail(ctx, t.ID, deliveryID, seq)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.EventDetailView(h.layout(r, "Event "+e.EventID, "events"), views.EventDetailPage{Event: e}))
}
