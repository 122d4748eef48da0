package salesforcetest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The one query shape the fake understands, the backfill's: fields, a
// SystemModstamp window of two dateTime literals, oldest first. Anything
// else is refused as Salesforce refuses a query it cannot parse.
var (
	soqlPattern = regexp.MustCompile(`(?i)^SELECT\s+([A-Za-z0-9_]+(?:\s*,\s*[A-Za-z0-9_]+)*)\s+FROM\s+([A-Za-z0-9_]+)\s+` +
		`WHERE\s+SystemModstamp\s*>=\s*(\S+)\s+AND\s+SystemModstamp\s*<\s*(\S+)\s+ORDER\s+BY\s+SystemModstamp(?:\s+ASC)?$`)
	// The documented dateTime literal forms: ...Z, ...+hh:mm, ...-hh:mm,
	// whole seconds.
	soqlTimePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})$`)
)

func parseLiteral(s string) (time.Time, bool) {
	if !soqlTimePattern.MatchString(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// query answers the Query resource for q: the first page, and a
// nextRecordsUrl while more remain.
func (s *Server) query(w http.ResponseWriter, version, q string) {
	m := soqlPattern.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		apiError(w, http.StatusBadRequest, "MALFORMED_QUERY", fmt.Sprintf("unexpected token in query: %.100s", q))
		return
	}
	typ := ""
	for _, t := range s.types() {
		if strings.EqualFold(t, m[2]) {
			typ = t
		}
	}
	if typ == "" {
		apiError(w, http.StatusBadRequest, "INVALID_TYPE", fmt.Sprintf("sObject type '%s' is not supported.", m[2]))
		return
	}
	from, ok1 := parseLiteral(m[3])
	to, ok2 := parseLiteral(m[4])
	if !ok1 || !ok2 {
		apiError(w, http.StatusBadRequest, "MALFORMED_QUERY", "value of filter criterion for field 'SystemModstamp' must be of type dateTime and should not be enclosed in quotes")
		return
	}
	columns := s.columns(typ)
	var fields []string
	for _, f := range strings.Split(m[1], ",") {
		f = strings.TrimSpace(f)
		i := slices.IndexFunc(columns, func(c string) bool { return strings.EqualFold(c, f) })
		if i < 0 {
			apiError(w, http.StatusBadRequest, "INVALID_FIELD", fmt.Sprintf("No such column '%s' on entity '%s'.", f, typ))
			return
		}
		fields = append(fields, columns[i])
	}
	var matched []map[string]any
	for _, rec := range s.records[typ] {
		at := rec["SystemModstamp"].(time.Time)
		if !at.Before(from) && at.Before(to) {
			matched = append(matched, rec)
		}
	}
	slices.SortStableFunc(matched, func(a, b map[string]any) int {
		return a["SystemModstamp"].(time.Time).Compare(b["SystemModstamp"].(time.Time))
	})
	rows := make([]map[string]any, len(matched))
	for i, rec := range matched {
		row := map[string]any{"attributes": map[string]string{"type": typ, "url": "/services/data/" + version + "/sobjects/" + typ + "/" + rec["Id"].(string)}}
		for _, f := range fields {
			row[f] = rest(rec[f])
		}
		rows[i] = row
	}
	locator := "01gFAKE" + strconv.Itoa(len(s.locators)+1)
	s.locators[locator] = rows
	s.page(w, version, locator, "0")
}

// page answers one page of a query from offset, as the first answer or a
// nextRecordsUrl's.
func (s *Server) page(w http.ResponseWriter, version, locator, offset string) {
	rows, ok := s.locators[locator]
	from, err := strconv.Atoi(offset)
	if !ok || err != nil || from > len(rows) {
		apiError(w, http.StatusBadRequest, "INVALID_QUERY_LOCATOR", "invalid query locator")
		return
	}
	to := min(from+max(s.PageSize, 1), len(rows))
	answer := map[string]any{"totalSize": len(rows), "done": to == len(rows), "records": rows[from:to]}
	if s.Endless && to == len(rows) && len(rows) > 0 {
		answer["done"], to = false, 0
	}
	if answer["done"] == false {
		answer["nextRecordsUrl"] = fmt.Sprintf("/services/data/%s/query/%s-%d", version, locator, to)
	}
	writeJSON(w, answer)
}

// columns are the fields of typ: Id, SystemModstamp and every field a
// record of it was given.
func (s *Server) columns(typ string) []string {
	cols := []string{"Id", "SystemModstamp"}
	for _, f := range s.fields[typ] {
		if !slices.Contains(cols, f) {
			cols = append(cols, f)
		}
	}
	return cols
}

// rest is a field's value as REST writes it.
func rest(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(restTime)
	}
	return v
}

// getDeleted answers sObject Get Deleted: start and end are UTC dateTimes
// (ISO 8601, such as 2013-05-05T00:00:00+00:00) whose seconds are ignored.
func (s *Server) getDeleted(w http.ResponseWriter, typ, startText, endText string) {
	if !slices.Contains(s.types(), typ) {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "The requested resource does not exist")
		return
	}
	start, err1 := time.Parse(time.RFC3339, startText)
	end, err2 := time.Parse(time.RFC3339, endText)
	if err1 != nil || err2 != nil || !start.Before(end) {
		apiError(w, http.StatusBadRequest, "INVALID_REPLICATION_DATE", "start and end must be dateTimes, start before end")
		return
	}
	start, end = start.Truncate(time.Minute), end.Truncate(time.Minute)
	records := []map[string]string{}
	for _, d := range s.deleted[typ] {
		if !d.at.Before(start) && !d.at.After(end) {
			records = append(records, map[string]string{"id": d.id, "deletedDate": d.at.UTC().Format(restTime)})
		}
	}
	writeJSON(w, map[string]any{"deletedRecords": records,
		"earliestDateAvailable": start.Add(-15 * 24 * time.Hour).UTC().Format(restTime),
		"latestDateCovered":     end.UTC().Format(restTime)})
}
