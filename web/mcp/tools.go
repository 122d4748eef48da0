package mcp

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/domain"
)

// tools are the MCP tools, each a call of the tenant API (api).
type tools struct {
	api http.Handler
}

// The tools' inputs; a field's jsonschema tag is its description.
type (
	findRecordArgs struct {
		Provider   string `json:"provider,omitempty" jsonschema:"the provider's name in Tidemark, such as crm or hubspot"`
		ObjectType string `json:"object_type,omitempty" jsonschema:"the object type, such as contact, company or deal"`
		ObjectID   string `json:"object_id,omitempty" jsonschema:"the record's id at the provider; with provider and object_type it returns that one record"`
		Q          string `json:"q,omitempty" jsonschema:"search text: words of the snapshots as typed (case-insensitive, not stemmed; \"a phrase\", -word and or work), or the start of a record id"`
		Limit      int    `json:"limit,omitempty" jsonschema:"records per page, 1 to 100 (default 20); fewer when they are large"`
		Cursor     string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; none for the first"`
	}
	timelineArgs struct {
		Provider   string `json:"provider" jsonschema:"the provider's name in Tidemark, such as crm or hubspot"`
		ObjectType string `json:"object_type" jsonschema:"the object type, such as contact or deal"`
		ObjectID   string `json:"object_id" jsonschema:"the record's id at the provider"`
		Limit      int    `json:"limit,omitempty" jsonschema:"events per page, 1 to 100 (default 20); fewer when they are large"`
		Cursor     string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; none for the first (which also shows the record)"`
	}
	eventsArgs struct {
		Provider   string `json:"provider,omitempty" jsonschema:"only this provider's events"`
		ContactID  string `json:"contact_id,omitempty" jsonschema:"only this contact's events (object_type contact)"`
		Outcome    string `json:"outcome,omitempty" jsonschema:"only events with this outcome"`
		ObjectType string `json:"object_type,omitempty" jsonschema:"only events of this object type"`
		ObjectID   string `json:"object_id,omitempty" jsonschema:"only events of the record with this id"`
		Q          string `json:"q,omitempty" jsonschema:"search text: words of the events' snapshots as typed (\"a phrase\", -word and or work)"`
		Limit      int    `json:"limit,omitempty" jsonschema:"events per page, 1 to 100 (default 20)"`
		Cursor     string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; none for the first"`
	}
	deliveryArgs struct {
		DeliveryID string `json:"delivery_id" jsonschema:"the delivery's id, as events and deliveries name it (delivery_id)"`
	}
	conflictsArgs struct {
		Status string `json:"status,omitempty" jsonschema:"only conflicts with this status: open (awaiting a decision), kept or adopted"`
		Limit  int    `json:"limit,omitempty" jsonschema:"conflicts per page, 1 to 100 (default 20); fewer when their snapshots are large"`
		Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; none for the first"`
	}
	conflictArgs struct {
		ConflictID int64 `json:"conflict_id" jsonschema:"the conflict's id (id in list_conflicts)"`
	}
	alertsArgs struct {
		State  string `json:"state,omitempty" jsonschema:"only alerts in this state: firing or resolved"`
		Limit  int    `json:"limit,omitempty" jsonschema:"alerts per page, 1 to 100 (default 20)"`
		Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page; none for the first"`
	}
	changesArgs struct {
		After      string `json:"after,omitempty" jsonschema:"next_cursor of the previous call; none starts at the oldest change kept"`
		Limit      int    `json:"limit,omitempty" jsonschema:"changes per page, 1 to 100 (default 20); fewer when their snapshots are large"`
		Provider   string `json:"provider,omitempty" jsonschema:"only this provider's changes"`
		ObjectType string `json:"object_type,omitempty" jsonschema:"only changes of this object type"`
	}
	resolveArgs struct {
		ConflictID int64  `json:"conflict_id" jsonschema:"the open conflict's id"`
		Resolution string `json:"resolution" jsonschema:"keep: the accepted snapshot stays; adopt: the conflicting snapshot replaces it (only while the record is still at the conflict's revision)"`
		Note       string `json:"note,omitempty" jsonschema:"why, for the audit log and the conflict's record (at most 2000 characters)"`
	}
)

// enums are the values some inputs take.
var enums = map[string][]any{
	"status":     {domain.ConflictOpen, domain.ConflictKept, domain.ConflictAdopted},
	"state":      {"firing", "resolved"},
	"resolution": {domain.ResolveKeep, domain.ResolveAdopt},
	"outcome":    outcomes(),
}

func outcomes() []any {
	out := make([]any, len(domain.Outcomes))
	for i, o := range domain.Outcomes {
		out[i] = string(o)
	}
	return out
}

// addReads adds the tools every token of the tenant may call.
func (t tools) addReads(s *sdk.Server) {
	addTool(s, "find_record", "Find CRM records: one by provider, object_type and object_id (its snapshot, revision and "+
		"state), or a page of them by search text q and filters, most recently changed first.", true, t.findRecord)
	addTool(s, "record_timeline", "Show one record's history: its current state and every event received for it "+
		"(outcome, revision, reason, delivery_id), newest first.", true, t.recordTimeline)
	addTool(s, "list_events", "List the event history, newest first, filtered by provider, record, outcome "+
		"(applied, stale, duplicate, revision_conflict, ...) or search text.", true, t.listEvents)
	addTool(s, "inspect_delivery", "Inspect one webhook delivery as received: its request, headers and body, the "+
		"signature verdict, each event's outcome, and its replays.", true, t.inspectDelivery)
	addTool(s, "list_conflicts", "List revision conflicts (two different snapshots claiming the same revision of a "+
		"record), newest first, with both snapshots; status open for those awaiting a decision.", true, t.listConflicts)
	addTool(s, "get_conflict", "Show one revision conflict: the accepted and the conflicting snapshot and the fields "+
		"where they differ.", true, t.getConflict)
	addTool(s, "list_alerts", "List the tenant's alerts, fired and resolved by its alert rules, newest first; state "+
		"firing for those still firing.", true, t.listAlerts)
	addTool(s, "read_changes", "Read the feed of accepted changes to records (each with its snapshot and changed "+
		"fields), oldest first, after a cursor.", true, t.readChanges)
}

// addWrites adds the tools that change something: read-write tokens only.
func (t tools) addWrites(s *sdk.Server) {
	addTool(s, "resolve_conflict", "Resolve an open revision conflict: keep the accepted snapshot, or adopt the "+
		"conflicting one; recorded in the audit log with this API token as the actor.", false, t.resolveConflict)
	addTool(s, "replay_delivery", "Replay a stored webhook delivery as a new delivery through today's parser and "+
		"rules (events already applied come back duplicate); recorded in the audit log.", false, t.replayDelivery)
}

// addTool adds a tool whose input schema is In's, with the limits and
// enums of its fields.
func addTool[In any](s *sdk.Server, name, description string, readOnly bool, run func(context.Context, In) (*sdk.CallToolResult, error)) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err) // the inputs are the types above
	}
	for field, p := range schema.Properties {
		if field == "limit" {
			p.Minimum, p.Maximum = new(float64(1)), new(float64(maxLimit))
		}
		p.Enum = enums[field]
	}
	sdk.AddTool(s, &sdk.Tool{Name: name, Description: description, InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			r, err := run(ctx, in)
			return r, nil, err
		})
}

// failure is a result that refuses the call as given.
func failure(msg string) *sdk.CallToolResult {
	r := result([]byte(msg))
	r.IsError = true
	return r
}

// listResult answers one page of a list.
func (t tools) listResult(ctx context.Context, l list) (*sdk.CallToolResult, error) {
	body, notes, refused, err := t.page(ctx, l)
	if refused != nil || err != nil {
		return refused, err
	}
	return result(body, notes...), nil
}

func recordPath(provider, objectType, objectID string) string {
	return "/records/" + seg(provider) + "/" + seg(objectType) + "/" + seg(objectID)
}

func (t tools) findRecord(ctx context.Context, in findRecordArgs) (*sdk.CallToolResult, error) {
	if in.ObjectID != "" {
		if in.Provider == "" || in.ObjectType == "" {
			return failure("object_id names a record with provider and object_type: give all three, or search with q"), nil
		}
		return t.object(ctx, http.MethodGet, recordPath(in.Provider, in.ObjectType, in.ObjectID), nil)
	}
	return t.listResult(ctx, list{path: "/records", key: "records", cursorArg: "cursor", cursor: in.Cursor, limit: in.Limit,
		query: url.Values{"provider": {in.Provider}, "object_type": {in.ObjectType}, "q": {in.Q}}})
}

func (t tools) listEvents(ctx context.Context, in eventsArgs) (*sdk.CallToolResult, error) {
	return t.listResult(ctx, list{path: "/events", key: "events", cursorArg: "cursor", cursor: in.Cursor, limit: in.Limit,
		query: url.Values{"provider": {in.Provider}, "contact_id": {in.ContactID}, "outcome": {in.Outcome},
			"object_type": {in.ObjectType}, "object_id": {in.ObjectID}, "q": {in.Q}}})
}

func (t tools) inspectDelivery(ctx context.Context, in deliveryArgs) (*sdk.CallToolResult, error) {
	return t.object(ctx, http.MethodGet, "/deliveries/"+seg(in.DeliveryID), nil)
}

func (t tools) listConflicts(ctx context.Context, in conflictsArgs) (*sdk.CallToolResult, error) {
	return t.listResult(ctx, list{path: "/conflicts", key: "conflicts", cursorArg: "cursor", cursor: in.Cursor, limit: in.Limit,
		query: url.Values{"status": {in.Status}}})
}

func (t tools) listAlerts(ctx context.Context, in alertsArgs) (*sdk.CallToolResult, error) {
	return t.listResult(ctx, list{path: "/alerts", key: "alerts", cursorArg: "cursor", cursor: in.Cursor, limit: in.Limit,
		query: url.Values{"state": {in.State}}})
}

func (t tools) readChanges(ctx context.Context, in changesArgs) (*sdk.CallToolResult, error) {
	return t.listResult(ctx, list{path: "/changes", key: "changes", cursorArg: "after", cursor: in.After, limit: in.Limit,
		query: url.Values{"provider": {in.Provider}, "object_type": {in.ObjectType}}})
}

func (t tools) resolveConflict(ctx context.Context, in resolveArgs) (*sdk.CallToolResult, error) {
	return t.object(ctx, http.MethodPost, "/conflicts/"+strconv.FormatInt(in.ConflictID, 10)+"/resolve",
		map[string]string{"resolution": in.Resolution, "note": in.Note})
}

func (t tools) replayDelivery(ctx context.Context, in deliveryArgs) (*sdk.CallToolResult, error) {
	return t.object(ctx, http.MethodPost, "/deliveries/"+seg(in.DeliveryID)+"/replay", nil)
}
