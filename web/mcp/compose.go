package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/domain"
)

// The tools here compose answers the API has no route for, from the
// answers of the routes it has.

// recordTimeline is the record (on the first page) and a page of the
// events received for it: the API has no timeline route, but has both.
func (t tools) recordTimeline(ctx context.Context, in timelineArgs) (*sdk.CallToolResult, error) {
	events := list{path: "/events", key: "events", cursorArg: "cursor", cursor: in.Cursor, limit: in.Limit,
		query: url.Values{"provider": {in.Provider}, "object_type": {in.ObjectType}, "object_id": {in.ObjectID}}}
	record := []byte("null")
	var notes []string
	if in.Cursor == "" {
		path := recordPath(in.Provider, in.ObjectType, in.ObjectID)
		a, err := t.call(ctx, http.MethodGet, path, nil, nil)
		switch {
		case err != nil:
			return nil, err
		case a.ok():
			record = a.body
		case a.status != http.StatusNotFound: // a record erased or never stored still has its events
			return refusal(a), nil
		}
		if len(record) > maxResult/2 {
			record = marshal(fmt.Sprintf("the record is %d bytes; read it with find_record", len(record)))
			notes = append(notes, "The record was left out: it is larger than half of what a tool answers.")
		}
		events.budget = maxResult - len(record) - 64
	}
	body, more, refused, err := t.page(ctx, events)
	if refused != nil || err != nil {
		return refused, err
	}
	var page struct {
		Events     json.RawMessage `json:"events"`
		NextCursor json.RawMessage `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return result(body, append(notes, more...)...), nil // a page cut mid-item: as it is
	}
	return result(marshal(struct {
		Record     json.RawMessage `json:"record"`
		Events     json.RawMessage `json:"events"`
		NextCursor json.RawMessage `json:"next_cursor"`
	}{record, page.Events, page.NextCursor}), append(notes, more...)...), nil
}

// Reading one conflict: the API lists conflicts, newest first, but has no
// route for one, so get_conflict pages through the list for its id, the
// open ones first (where a conflict to decide is), reading at most
// conflictScanPages pages of conflictScanLimit.
const (
	conflictScanLimit = 500
	conflictScanPages = 20
)

// getConflict answers a conflict with the differences of its snapshots.
func (t tools) getConflict(ctx context.Context, in conflictArgs) (*sdk.CallToolResult, error) {
	pages := 0
	for _, status := range []string{domain.ConflictOpen, ""} {
		query := url.Values{"limit": {strconv.Itoa(conflictScanLimit)}}
		if status != "" {
			query.Set("status", status)
		}
		for more := true; more; pages++ {
			if pages == conflictScanPages {
				return failure(fmt.Sprintf("conflict %d is not among the open conflicts nor the newest %d, "+
					"which is as far as this tool looks", in.ConflictID, conflictScanPages*conflictScanLimit)), nil
			}
			a, err := t.call(ctx, http.MethodGet, "/conflicts", query, nil)
			if err != nil {
				return nil, err
			}
			if !a.ok() {
				return refusal(a), nil
			}
			var page struct {
				Conflicts  []json.RawMessage `json:"conflicts"`
				NextCursor *string           `json:"next_cursor"`
			}
			if err := json.Unmarshal(a.body, &page); err != nil {
				return nil, err
			}
			for _, raw := range page.Conflicts {
				if c, ok := conflictWithID(raw, in.ConflictID); ok {
					return fitObject(marshal(c), "the conflict is in GET "+apiURL(ctx, "/conflicts")+" of the JSON API"), nil
				}
			}
			more = page.NextCursor != nil
			if more {
				query.Set("cursor", *page.NextCursor)
			}
		}
	}
	return failure(fmt.Sprintf("404 Not Found: conflict %d not found", in.ConflictID)), nil
}

// conflictDetail is a conflict as get_conflict answers it: the fields
// that differ first, then the API's conflict with both snapshots.
type conflictDetail struct {
	Differences []difference    `json:"differences"`
	Conflict    json.RawMessage `json:"conflict"`
}

// conflictWithID reads raw, a conflict of the API's list, when its id is
// id.
func conflictWithID(raw json.RawMessage, id int64) (conflictDetail, bool) {
	var c struct {
		ID          int64 `json:"id"`
		Accepted    struct{ Snapshot json.RawMessage }
		Conflicting struct{ Snapshot json.RawMessage }
	}
	if json.Unmarshal(raw, &c) != nil || c.ID != id {
		return conflictDetail{}, false
	}
	return conflictDetail{Differences: differences(c.Accepted.Snapshot, c.Conflicting.Snapshot), Conflict: raw}, true
}

// difference is a field whose value differs between two snapshots; a
// side without the field has no value.
type difference struct {
	Field       string          `json:"field"` // dotted within nested objects
	Accepted    json.RawMessage `json:"accepted,omitempty"`
	Conflicting json.RawMessage `json:"conflicting,omitempty"`
}

// differences lists the fields of two JSON snapshots that differ, by
// field name, nested objects field by field.
func differences(accepted, conflicting json.RawMessage) []difference {
	out := []difference{}
	diffValues("", decode(accepted), decode(conflicting), &out)
	return out
}

// absent stands for a field one snapshot lacks.
type absent struct{}

func decode(raw json.RawMessage) any {
	if len(raw) == 0 {
		return absent{}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1.0 and 1 stay apart, as the provider sent them
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	return v
}

func diffValues(field string, a, b any, out *[]difference) {
	am, aIsObject := a.(map[string]any)
	bm, bIsObject := b.(map[string]any)
	if aIsObject && bIsObject {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			av, ok := am[k]
			if !ok {
				av = absent{}
			}
			bv, ok := bm[k]
			if !ok {
				bv = absent{}
			}
			name := k
			if field != "" {
				name = field + "." + k
			}
			diffValues(name, av, bv, out)
		}
		return
	}
	if reflect.DeepEqual(a, b) {
		return
	}
	*out = append(*out, difference{Field: field, Accepted: valueJSON(a), Conflicting: valueJSON(b)})
}

func valueJSON(v any) json.RawMessage {
	if _, ok := v.(absent); ok {
		return nil
	}
	return marshal(v)
}
