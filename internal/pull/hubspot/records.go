package hubspot

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// The wire shapes of the CRM v3 objects API:
// https://developers.hubspot.com/docs/api/crm/search (search),
// https://developers.hubspot.com/docs/api-reference/latest/crm/objects/objects/batch/get-objects
// (batch read with propertiesWithHistory), and
// https://developers.hubspot.com/docs/api-reference/latest/crm/objects/companies/get-companies
// (the list, with archived=true).

type searchFilter struct {
	PropertyName string `json:"propertyName"`
	Operator     string `json:"operator"`
	Value        string `json:"value"`
}

type searchSort struct {
	PropertyName string `json:"propertyName"`
	Direction    string `json:"direction"`
}

type searchRequest struct {
	FilterGroups []filterGroup `json:"filterGroups"`
	Sorts        []searchSort  `json:"sorts"`
	Limit        int           `json:"limit"`
	After        string        `json:"after,omitempty"`
}

type filterGroup struct {
	Filters []searchFilter `json:"filters"`
}

// searchBody asks for the records modified in [from, to) (epoch
// milliseconds, which the search takes for datetimes), oldest first. It
// names no properties, so each type's default properties come back: those
// are the ones pulled (see pulledProperties).
func searchBody(o objectType, from, to int64, after string) searchRequest {
	return searchRequest{
		FilterGroups: []filterGroup{{Filters: []searchFilter{
			{PropertyName: o.modified, Operator: "GTE", Value: strconv.FormatInt(from, 10)},
			{PropertyName: o.modified, Operator: "LT", Value: strconv.FormatInt(to, 10)},
		}}},
		Sorts: []searchSort{{PropertyName: o.modified, Direction: "ASCENDING"}},
		Limit: searchLimit,
		After: after,
	}
}

type searchPage struct {
	Total   int            `json:"total"`
	Results []searchObject `json:"results"`
	Paging  struct {
		Next struct {
			After string `json:"after"`
		} `json:"next"`
	} `json:"paging"`
}

type searchObject struct {
	ID         string             `json:"id"`
	Properties map[string]*string `json:"properties"`
	CreatedAt  time.Time          `json:"createdAt"`
	UpdatedAt  time.Time          `json:"updatedAt"`
	ArchivedAt time.Time          `json:"archivedAt"`
}

// modified is the record's last modification in epoch milliseconds: the
// property the search sorted by, else updatedAt.
func (r searchObject) modified(o objectType) int64 {
	if v := r.Properties[o.modified]; v != nil {
		if t, ok := parseTime(*v); ok {
			return t.UnixMilli()
		}
	}
	return r.UpdatedAt.UnixMilli()
}

// parseTime reads a datetime property: ISO 8601, or epoch milliseconds.
func parseTime(v string) (time.Time, bool) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

type batchReadRequest struct {
	Inputs                []batchInput `json:"inputs"`
	Properties            []string     `json:"properties"`
	PropertiesWithHistory []string     `json:"propertiesWithHistory"`
}

type batchInput struct {
	ID string `json:"id"`
}

type batchReadAnswer struct {
	Results []historyObject `json:"results"`
}

type historyObject struct {
	ID                    string                    `json:"id"`
	CreatedAt             time.Time                 `json:"createdAt"`
	PropertiesWithHistory map[string][]historyEntry `json:"propertiesWithHistory"`
}

type historyEntry struct {
	Value     *string   `json:"value"`
	Timestamp time.Time `json:"timestamp"`
}

// historyBatch is the most ids a batch read takes with propertiesWithHistory
// ("The maximum number of inputs supported in a batch request for property
// histories is 50").
const historyBatch = 50

// notPulled are properties whose changes webhooks never carry as changes of
// their own: the id, the last-modified stamps (they change with every
// other property), and the creation date, which becomes the creation event.
var notPulled = map[string]bool{
	"hs_object_id": true, "lastmodifieddate": true, "hs_lastmodifieddate": true, "createdate": true,
}

// pulledProperties are the properties the search returned (each type's
// default properties: contacts' email, firstname and lastname; companies'
// domain and name; deals' amount, closedate, dealname, dealstage and
// pipeline) less notPulled. Asking for these only keeps a pull to what the
// search can say changed, without knowing a webhook subscription's list.
func pulledProperties(records []searchObject) []string {
	var names []string
	for _, r := range records {
		for name := range r.Properties {
			if !notPulled[name] && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// recordEvents reads the property history of records (a search page) and
// returns their events in the search's order: each record's creation, then
// one propertyChange per property at its own last change, oldest first.
func (s *Source) recordEvents(ctx context.Context, o objectType, records []searchObject) ([]domain.Event, error) {
	names := pulledProperties(records)
	byID := map[string]historyObject{}
	for chunk := range slices.Chunk(records, historyBatch) {
		req := batchReadRequest{Properties: names, PropertiesWithHistory: names}
		for _, r := range chunk {
			req.Inputs = append(req.Inputs, batchInput{ID: r.ID})
		}
		var answer batchReadAnswer
		if err := s.call(ctx, http.MethodPost, "/crm/v3/objects/"+o.api+"/batch/read", req, &answer); err != nil {
			return nil, fmt.Errorf("hubspot: read the history of %s: %w", o.api, err)
		}
		for _, h := range answer.Results {
			byID[h.ID] = h
		}
	}
	var events []domain.Event
	for _, r := range records {
		h, ok := byID[r.ID]
		if !ok {
			// Archived since the search: the deletions will carry it.
			continue
		}
		created := cmp.Or(h.CreatedAt, r.CreatedAt)
		if !created.IsZero() {
			events = append(events, newEvent(o.name, "creation", r.ID, domain.PropertyCreated, nil, created.UnixMilli()))
		}
		var changes []domain.Event
		for _, name := range names {
			entry, ok := newest(h.PropertiesWithHistory[name])
			if !ok {
				continue
			}
			value := ""
			if entry.Value != nil {
				value = *entry.Value
			}
			changes = append(changes, newEvent(o.name, "propertyChange", r.ID, name, &value, entry.Timestamp.UnixMilli()))
		}
		slices.SortStableFunc(changes, func(a, b domain.Event) int { return cmp.Compare(*a.Revision, *b.Revision) })
		events = append(events, changes...)
	}
	return events, nil
}

// newest is the latest history entry, whatever order HubSpot lists them in.
func newest(history []historyEntry) (historyEntry, bool) {
	if len(history) == 0 {
		return historyEntry{}, false
	}
	n := history[0]
	for _, e := range history[1:] {
		if e.Timestamp.After(n.Timestamp) {
			n = e
		}
	}
	return n, true
}

// pulled is an event's Payload: what was read, never how.
type pulled struct {
	Source     string  `json:"source"`
	ObjectType string  `json:"objectType"`
	ObjectID   string  `json:"objectId"`
	Property   string  `json:"property"`
	Value      *string `json:"value,omitempty"`
	Timestamp  string  `json:"timestamp"`
}

// newEvent is an event as the webhook parser makes it for the same change
// (hubspotEvent): a creation or deletion with an empty snapshot, or a
// propertyChange of one property, revised at ms. Its id names the object,
// property and revision, so pulling it again is a duplicate.
func newEvent(objectType, action, id, property string, value *string, ms int64) domain.Event {
	return pulledEvent(fromSearch, objectType, action, id, property, value, ms)
}

// origin is where a pulled event was read: the prefix of its id and the
// source its payload names.
type origin struct{ idPrefix, source string }

var (
	fromSearch  = origin{"backfill", "hubspot-api"}
	fromJournal = origin{"journal", "hubspot-journal"}
)

// pulledEvent is newEvent for an event read from o.
func pulledEvent(o origin, objectType, action, id, property string, value *string, ms int64) domain.Event {
	stamp := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	payload, _ := json.Marshal(pulled{Source: o.source, ObjectType: objectType, ObjectID: id, Property: property, Value: value, Timestamp: stamp})
	e := domain.Event{
		EventID:   fmt.Sprintf("%s:%s:%s:%s:%d", o.idPrefix, objectType, id, property, ms),
		Scope:     domain.ScopeName{ObjectType: objectType, Action: action},
		ObjectID:  id,
		Timestamp: stamp,
		Payload:   payload,
		Property:  property,
		Snapshot:  json.RawMessage(`{}`),
	}
	if value != nil {
		if strings.ContainsRune(*value, 0) || len(property) > 255 || strings.ContainsRune(property, 0) || strings.HasPrefix(property, "$") {
			// The webhook parser refuses these; so does a pull.
			e.Property, e.Snapshot = "", nil
			e.RejectReason = fmt.Sprintf("property %.100q or its value cannot be stored (a NUL character, a leading $ or more than 255 characters)", property)
			return e
		}
		e.Snapshot, _ = json.Marshal(map[string]string{property: *value})
	}
	e.Revision, e.RevisionTime = &ms, time.UnixMilli(ms)
	return e
}

type listPage struct {
	Results []searchObject `json:"results"`
	Paging  struct {
		Next struct {
			After string `json:"after"`
		} `json:"next"`
	} `json:"paging"`
}

// listLimit is the most records a list page holds.
const listLimit = 100

// deletions emits the records archived in [from, to), oldest first, a
// page of listLimit at a time, and returns how many. The list of archived
// records cannot be filtered by archivedAt, so every archived record
// (HubSpot keeps them 90 days) is read and the window applied here.
func (s *Source) deletions(ctx context.Context, o objectType, from, to int64, emit func([]domain.Event) error) (int, error) {
	var found []searchObject
	after := ""
	for {
		q := url.Values{"archived": {"true"}, "limit": {strconv.Itoa(listLimit)}, "properties": {"hs_object_id"}}
		if after != "" {
			q.Set("after", after)
		}
		var page listPage
		if err := s.call(ctx, http.MethodGet, "/crm/v3/objects/"+o.api+"?"+q.Encode(), nil, &page); err != nil {
			return 0, fmt.Errorf("hubspot: list archived %s: %w", o.api, err)
		}
		for _, r := range page.Results {
			if at := r.ArchivedAt.UnixMilli(); !r.ArchivedAt.IsZero() && at >= from && at < to {
				found = append(found, r)
			}
		}
		if after = page.Paging.Next.After; after == "" {
			break
		}
	}
	slices.SortFunc(found, func(a, b searchObject) int {
		return cmp.Or(a.ArchivedAt.Compare(b.ArchivedAt), cmp.Compare(a.ID, b.ID))
	})
	for chunk := range slices.Chunk(found, listLimit) {
		events := make([]domain.Event, len(chunk))
		for i, r := range chunk {
			events[i] = newEvent(o.name, "deletion", r.ID, domain.PropertyDeleted, nil, r.ArchivedAt.UnixMilli())
		}
		if err := emit(events); err != nil {
			return 0, err
		}
	}
	return len(found), nil
}
