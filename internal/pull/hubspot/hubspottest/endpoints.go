package hubspottest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The request and answer shapes below follow the pages named in the
// package comment; fields the fake does not use are still accepted where
// HubSpot documents them, and anything else is refused.

type searchRequest struct {
	FilterGroups []struct {
		Filters []filter `json:"filters"`
	} `json:"filterGroups"`
	Sorts      []sortSpec `json:"sorts"`
	Properties []string   `json:"properties"`
	Limit      *int       `json:"limit"`
	After      string     `json:"after"`
	Query      string     `json:"query"`
}

type filter struct {
	PropertyName string   `json:"propertyName"`
	Operator     string   `json:"operator"`
	Value        string   `json:"value"`
	HighValue    string   `json:"highValue"`
	Values       []string `json:"values"`
}

type sortSpec struct {
	PropertyName string `json:"propertyName"`
	Direction    string `json:"direction"`
}

type object struct {
	ID                    string                    `json:"id"`
	Properties            map[string]*string        `json:"properties"`
	PropertiesWithHistory map[string][]historyEntry `json:"propertiesWithHistory,omitempty"`
	CreatedAt             string                    `json:"createdAt"`
	UpdatedAt             string                    `json:"updatedAt"`
	Archived              bool                      `json:"archived"`
	ArchivedAt            string                    `json:"archivedAt,omitempty"`
}

type historyEntry struct {
	Value      string `json:"value"`
	Timestamp  string `json:"timestamp"`
	SourceType string `json:"sourceType"`
	SourceID   string `json:"sourceId"`
}

type paging struct {
	Next struct {
		After string `json:"after"`
		Link  string `json:"link"`
	} `json:"next"`
}

// dateProperty reports whether a property holds a datetime, compared as
// one in filters and sorts.
func dateProperty(name string) bool {
	return name == "createdate" || name == "lastmodifieddate" || name == "hs_lastmodifieddate"
}

// parseDate reads a filter value for a datetime: epoch milliseconds or ISO 8601.
func parseDate(v string) (time.Time, bool) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, typ string) {
	var req searchRequest
	if !decode(w, r, &req) {
		return
	}
	limit := 10
	if req.Limit != nil {
		limit = *req.Limit
	}
	offset, err := strconv.Atoi(cmp.Or(req.After, "0"))
	switch {
	case limit < 1 || limit > maxSearchLimit:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("limit must be 1 to %d; got %d", maxSearchLimit, limit))
		return
	case err != nil || offset < 0:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("after %q is not a paging cursor of this search", req.After))
		return
	case len(req.FilterGroups) > 5:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "at most 5 filterGroups are allowed")
		return
	case len(req.Sorts) > 1:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "at most one sort is allowed")
		return
	case req.Query != "":
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "the fake does not search by query")
		return
	}
	for _, g := range req.FilterGroups {
		if len(g.Filters) == 0 || len(g.Filters) > 10 {
			writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "a filterGroup holds 1 to 10 filters")
			return
		}
		for _, f := range g.Filters {
			if msg := s.checkFilter(typ, f); msg != "" {
				writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", msg)
				return
			}
		}
	}
	for _, o := range req.Sorts {
		if !s.known(typ, o.PropertyName) || (o.Direction != "ASCENDING" && o.Direction != "DESCENDING") {
			writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("sort %+v needs a known propertyName and a direction ASCENDING or DESCENDING", o))
			return
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if offset >= s.cap {
		// As HubSpot: the search cannot page past its cap, whatever the total.
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("The search endpoints are limited to %d total results for any given query", s.cap))
		return
	}
	var found []*record
	for _, rec := range s.objects[typ] {
		if rec.archivedAt.IsZero() && matches(rec, req) {
			found = append(found, rec)
		}
	}
	slices.SortFunc(found, func(a, b *record) int { return compareRecords(a, b, req.Sorts) })
	end := min(offset+limit, len(found), s.cap)
	results := []object{}
	if offset < end {
		for _, rec := range found[offset:end] {
			results = append(results, s.render(typ, rec, orDefault(req.Properties, typ), nil))
		}
	}
	answer := map[string]any{"total": len(found), "results": results}
	if end < len(found) {
		var p paging
		p.Next.After = strconv.Itoa(end)
		answer["paging"] = p
	}
	writeJSON(w, http.StatusOK, answer)
}

// orDefault is the properties asked for, or typ's default ones.
func orDefault(props []string, typ string) []string {
	if len(props) == 0 {
		return defaultProperties[typ]
	}
	return props
}

// known reports whether typ's records have (or could have) the property.
func (s *Server) known(typ, name string) bool {
	if slices.Contains(defaultProperties[typ], name) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.objects[typ] {
		if _, ok := rec.history[name]; ok {
			return true
		}
	}
	return false
}

func (s *Server) checkFilter(typ string, f filter) string {
	if !s.known(typ, f.PropertyName) {
		return fmt.Sprintf("There was a problem with the request: property %q does not exist on %s", f.PropertyName, typ)
	}
	switch f.Operator {
	case "EQ", "NEQ", "LT", "LTE", "GT", "GTE":
	default:
		return fmt.Sprintf("the fake handles EQ, NEQ, LT, LTE, GT and GTE; got operator %q", f.Operator)
	}
	if dateProperty(f.PropertyName) {
		if _, ok := parseDate(f.Value); !ok {
			return fmt.Sprintf("%s filters on a datetime: value %q must be epoch milliseconds or ISO 8601", f.Operator, f.Value)
		}
	}
	return ""
}

// matches applies the filter groups: OR between groups, AND within one.
func matches(rec *record, req searchRequest) bool {
	if len(req.FilterGroups) == 0 {
		return true
	}
	for _, g := range req.FilterGroups {
		all := true
		for _, f := range g.Filters {
			value, _ := rec.current(f.PropertyName)
			if !holds(compareValues(f.PropertyName, value, f.Value), f.Operator) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func holds(c int, operator string) bool {
	switch operator {
	case "EQ":
		return c == 0
	case "NEQ":
		return c != 0
	case "LT":
		return c < 0
	case "LTE":
		return c <= 0
	case "GT":
		return c > 0
	case "GTE":
		return c >= 0
	}
	return false
}

func compareValues(name, a, b string) int {
	if dateProperty(name) {
		ta, _ := parseDate(a)
		tb, _ := parseDate(b)
		return ta.Compare(tb)
	}
	return cmp.Compare(a, b)
}

func compareRecords(a, b *record, sorts []sortSpec) int {
	for _, o := range sorts {
		va, _ := a.current(o.PropertyName)
		vb, _ := b.current(o.PropertyName)
		c := compareValues(o.PropertyName, va, vb)
		if o.Direction == "DESCENDING" {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return compareIDs(a.id, b.id)
}

func compareIDs(a, b string) int {
	ia, _ := strconv.Atoi(a)
	ib, _ := strconv.Atoi(b)
	return cmp.Compare(ia, ib)
}

// render is a record as the API answers it: the properties asked for (null
// when never set) and, when asked, their history newest first.
func (s *Server) render(typ string, rec *record, props, withHistory []string) object {
	o := object{ID: rec.id, Properties: map[string]*string{}, CreatedAt: iso(rec.createdAt),
		UpdatedAt: iso(rec.updatedAt), Archived: !rec.archivedAt.IsZero()}
	if o.Archived {
		o.ArchivedAt = iso(rec.archivedAt)
	}
	for _, name := range props {
		if v, ok := rec.current(name); ok {
			o.Properties[name] = &v
		} else {
			o.Properties[name] = nil
		}
	}
	for _, name := range withHistory {
		h := slices.Clone(rec.history[name])
		if len(h) == 0 {
			continue
		}
		slices.SortStableFunc(h, func(a, b change) int { return b.at.Compare(a.at) })
		if o.PropertiesWithHistory == nil {
			o.PropertiesWithHistory = map[string][]historyEntry{}
		}
		for _, c := range h {
			o.PropertiesWithHistory[name] = append(o.PropertiesWithHistory[name],
				historyEntry{Value: c.value, Timestamp: iso(c.at), SourceType: "API", SourceID: "hubspottest"})
		}
	}
	return o
}

type batchReadRequest struct {
	Inputs []struct {
		ID string `json:"id"`
	} `json:"inputs"`
	Properties            []string `json:"properties"`
	PropertiesWithHistory []string `json:"propertiesWithHistory"`
	IDProperty            string   `json:"idProperty"`
}

func (s *Server) batchRead(w http.ResponseWriter, r *http.Request, typ string) {
	var req batchReadRequest
	if !decode(w, r, &req) {
		return
	}
	switch {
	case len(req.Inputs) == 0 || len(req.Inputs) > maxBatchInputs:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("inputs must hold 1 to %d ids", maxBatchInputs))
		return
	case len(req.PropertiesWithHistory) > 0 && len(req.Inputs) > maxHistoryBatch:
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR",
			fmt.Sprintf("The maximum number of inputs supported in a batch request for property histories is %d. Please reduce the number of items and try again", maxHistoryBatch))
		return
	case req.IDProperty != "":
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", "the fake reads by id only")
		return
	}
	now := iso(time.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	results := []object{}
	var missing []string
	for _, in := range req.Inputs {
		rec := s.objects[typ][in.ID]
		if rec == nil || !rec.archivedAt.IsZero() {
			missing = append(missing, in.ID)
			continue
		}
		results = append(results, s.render(typ, rec, orDefault(req.Properties, typ), req.PropertiesWithHistory))
	}
	answer := map[string]any{"status": "COMPLETE", "results": results, "startedAt": now, "completedAt": now}
	if len(missing) == 0 {
		writeJSON(w, http.StatusOK, answer)
		return
	}
	answer["numErrors"] = 1
	answer["errors"] = []map[string]any{{
		"status": "error", "category": "OBJECT_NOT_FOUND", "message": "Could not get some " + typ + " objects, they may be deleted or not exist.",
		"context": map[string]any{"ids": missing},
	}}
	writeJSON(w, http.StatusMultiStatus, answer)
}

// listArchived lists records page by page in id order; with archived=true
// only archived ones, each with its archivedAt.
func (s *Server) listArchived(w http.ResponseWriter, r *http.Request, typ string) {
	q := r.URL.Query()
	limit, err := strconv.Atoi(cmp.Or(q.Get("limit"), "10"))
	if err != nil || limit < 1 || limit > maxListLimit {
		writeError(w, http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("limit must be 1 to %d", maxListLimit))
		return
	}
	archived := q.Get("archived") == "true"
	after := q.Get("after")
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*record
	for _, rec := range s.objects[typ] {
		if rec.archivedAt.IsZero() != archived && (after == "" || compareIDs(rec.id, after) > 0) {
			all = append(all, rec)
		}
	}
	slices.SortFunc(all, func(a, b *record) int { return compareIDs(a.id, b.id) })
	results := []object{}
	for _, rec := range all[:min(limit, len(all))] {
		results = append(results, s.render(typ, rec, defaultProperties[typ], nil))
	}
	answer := map[string]any{"results": results}
	if len(all) > limit {
		var p paging
		p.Next.After = results[len(results)-1].ID
		p.Next.Link = s.srv.URL + r.URL.Path + "?archived=" + strconv.FormatBool(archived) + "&after=" + p.Next.After
		answer["paging"] = p
	}
	writeJSON(w, http.StatusOK, answer)
}
