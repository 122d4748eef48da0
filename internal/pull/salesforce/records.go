package salesforce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// How the two APIs write a dateTime: REST 2026-11-29T09:15:30.250+0000, an
// outbound message (SOAP) 2026-11-29T09:15:30.250Z. Both always UTC.
const (
	restTime     = "2006-01-02T15:04:05.000-0700"
	outboundTime = "2006-01-02T15:04:05.000Z"
)

var restTimePattern = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4}$`)

// reader turns the records of one object type, as the REST API returns
// them, into the events the outbound message parser makes of the same
// records: a snapshot of Id, the revision field and the named fields, each
// value as the outbound message writes it.
type reader struct {
	objectType    string
	revisionField string
	keep          map[string]bool // lower-case names of the snapshot's fields
}

func newReader(objectType, revisionField string, fields []string) reader {
	keep := map[string]bool{"id": true, strings.ToLower(revisionField): true}
	for _, f := range fields {
		keep[strings.ToLower(f)] = true
	}
	return reader{objectType: objectType, revisionField: revisionField, keep: keep}
}

// record is the event of one query result record, with its SystemModstamp.
// A value an outbound message cannot carry (a compound field, a related
// record) rejects the event, as the parser rejects nested elements.
func (r reader) record(raw json.RawMessage) (timed, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return timed{}, fmt.Errorf("a record is not a JSON object: %w", err)
	}
	var attrs struct {
		Type string `json:"type"`
	}
	json.Unmarshal(fields["attributes"], &attrs)
	delete(fields, "attributes")

	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	snapshot := map[string]any{}
	var id, stamp, revision string
	reject := ""
	for _, name := range names {
		value, flat := outboundValue(fields[name])
		if !flat && reject == "" {
			reject = fmt.Sprintf("field %.80s is a compound or related value; outbound message fields are flat values", name)
		}
		text, _ := value.(string)
		switch {
		case name == "Id":
			id = strings.TrimSpace(text)
		case name == "SystemModstamp":
			stamp = text
		}
		if strings.EqualFold(name, r.revisionField) {
			revision = strings.TrimSpace(text)
		}
		if r.keep[strings.ToLower(name)] {
			snapshot[name] = value
		}
	}
	if id == "" {
		return timed{}, errors.New("a record has no Id")
	}
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return timed{}, fmt.Errorf("record %s has no SystemModstamp", id)
	}
	snap, _ := json.Marshal(snapshot) // strings and nulls
	fields["attributes"], _ = json.Marshal(attrs)
	payload, _ := json.Marshal(fields)
	e := domain.Event{Scope: domain.ScopeName{ObjectType: r.objectType, Action: "outbound"}, ObjectID: id,
		Snapshot: snap, Payload: payload, RejectReason: reject}
	version := at.UnixMicro()
	if revision != "" {
		e.Timestamp = revision
		micros, t, err := provider.SalesforceRevision(revision)
		if err != nil {
			e.RejectReason = fmt.Sprintf("%s %.60q cannot be used as a revision: %v", r.revisionField, revision, err)
		} else {
			e.Revision, e.RevisionTime, version = &micros, t, micros
		}
	}
	e.EventID = "backfill:" + r.objectType + ":" + id + ":" + strconv.FormatInt(version, 10)
	return timed{e: e, at: at}, nil
}

// deletion is the event of one getDeleted record: the deletion of the
// record at its deletedDate, a revision in the unit of SystemModstamp's.
func (r reader) deletion(raw json.RawMessage) (timed, error) {
	var d struct {
		ID          string `json:"id"`
		DeletedDate string `json:"deletedDate"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || strings.TrimSpace(d.ID) == "" {
		return timed{}, errors.New("a deleted record has no id")
	}
	at, err := time.Parse(restTime, d.DeletedDate)
	if err != nil {
		return timed{}, fmt.Errorf("deleted record %s: deletedDate %.40q is not a dateTime", d.ID, d.DeletedDate)
	}
	stamp := at.UTC().Format(outboundTime)
	micros, t, err := provider.SalesforceRevision(stamp)
	if err != nil {
		return timed{}, fmt.Errorf("deleted record %s: %w", d.ID, err)
	}
	id := strings.TrimSpace(d.ID)
	e := domain.Event{EventID: "backfill:" + r.objectType + ":" + id + ":" + domain.PropertyDeleted + ":" + strconv.FormatInt(micros, 10),
		Scope: domain.ScopeName{ObjectType: r.objectType, Action: "deletion"}, ObjectID: id,
		Property: domain.PropertyDeleted, Snapshot: json.RawMessage(`{}`), Revision: &micros, RevisionTime: t,
		Timestamp: stamp, Payload: raw}
	return timed{e: e, at: t}, nil
}

// outboundValue is a REST value as an outbound message writes it: text,
// or nil for null. Booleans are true and false; numbers keep the digits
// Salesforce wrote; dates and times are already alike, but for dateTime's
// zone (+0000 in REST, Z in SOAP). flat is false for an object or an array,
// which an outbound message cannot carry.
func outboundValue(raw json.RawMessage) (value any, flat bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	switch v := v.(type) {
	case nil:
		return nil, true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return string(v), true
	case string:
		if restTimePattern.MatchString(v) {
			if t, err := time.Parse(restTime, v); err == nil {
				return t.UTC().Format(outboundTime), true
			}
		}
		return v, true
	}
	return nil, false
}
