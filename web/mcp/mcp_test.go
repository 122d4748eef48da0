package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// bearer adds a bearer token to every request, as an assistant's MCP
// client configured with a header does.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// connect initializes an MCP session with e's server as token, with the
// official SDK's client.
func connect(t *testing.T, e *webtest.Env, token string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "test-assistant", Version: "1"}, nil)
	cs, err := client.Connect(ctx(t), &sdk.StreamableClientTransport{Endpoint: e.Srv.URL + "/api/v1/mcp",
		HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// call calls a tool and returns its texts: the answer, then any notes.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (texts []string, isError bool) {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	for _, c := range res.Content {
		texts = append(texts, c.(*sdk.TextContent).Text)
	}
	return texts, res.IsError
}

// callJSON calls a tool that must succeed and decodes its answer.
func callJSON(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	texts, isError := call(t, cs, tool, args)
	if isError {
		t.Fatalf("%s %v: refused: %v", tool, args, texts)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(texts[0]), &out); err != nil {
		t.Fatalf("%s: answer %q is not a JSON object: %v", tool, texts[0], err)
	}
	return out
}

// items is a list answer's items.
func items(t *testing.T, answer map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := answer[key].([]any)
	if !ok {
		t.Fatalf("%q is %T in %v, want a list", key, answer[key], answer)
	}
	out := make([]map[string]any, len(raw))
	for i, it := range raw {
		out[i] = it.(map[string]any)
	}
	return out
}

func field(list []map[string]any, name string) []any {
	out := make([]any, len(list))
	for i, it := range list {
		out[i] = it[name]
	}
	return out
}

var (
	readTools  = []string{"find_record", "get_conflict", "inspect_delivery", "list_alerts", "list_conflicts", "list_events", "read_changes", "record_timeline"}
	writeTools = []string{"replay_delivery", "resolve_conflict"}
)

func toolNames(t *testing.T, cs *sdk.ClientSession) ([]string, []*sdk.Tool) {
	t.Helper()
	res, err := cs.ListTools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names, res.Tools
}

// TestMCPReadWriteToken walks an assistant through a tenant with a
// read-write token: it initializes, lists every tool with a described
// input, reads records, events, deliveries, conflicts, alerts and changes,
// then resolves the conflict and replays a delivery, both audited with
// the token as the actor.
func TestMCPReadWriteToken(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	token := e.TokenWith("acme", domain.NewAPIToken{Name: "assistant", Access: domain.TokenWrite})
	cs := connect(t, e, token)

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "tidemark" || !strings.Contains(init.Instructions, "next_cursor") {
		t.Fatalf("initialize: server %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	names, tools := toolNames(t, cs)
	if want := slices.Sorted(slices.Values(append(slices.Clone(readTools), writeTools...))); !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, tool := range tools {
		schema := tool.InputSchema.(map[string]any)
		if tool.Description == "" || schema["type"] != "object" {
			t.Errorf("%s: description %q, schema %v", tool.Name, tool.Description, schema)
		}
		for name, p := range schema["properties"].(map[string]any) {
			if p.(map[string]any)["description"] == nil {
				t.Errorf("%s: input %s has no description", tool.Name, name)
			}
		}
		if tool.Name == "resolve_conflict" {
			resolution := schema["properties"].(map[string]any)["resolution"].(map[string]any)
			if fmt.Sprint(resolution["enum"]) != "[keep adopt]" || fmt.Sprint(schema["required"]) != "[conflict_id resolution]" {
				t.Errorf("resolve_conflict's schema: %v", schema)
			}
		}
	}

	record := callJSON(t, cs, "find_record", map[string]any{"provider": "crm", "object_type": "contact", "object_id": "c-1"})
	if record["revision"] != 12.0 || record["snapshot"].(map[string]any)["company"] != "A12" {
		t.Fatalf("find_record c-1: %v", record)
	}
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	found := items(t, callJSON(t, cs, "find_record", map[string]any{"q": "a12"}), "records")
	if fmt.Sprint(field(found, "object_id")) != "[c-1]" {
		t.Fatalf("find_record q=a12: %v", found)
	}

	timeline := callJSON(t, cs, "record_timeline", map[string]any{"provider": "crm", "object_type": "contact", "object_id": "c-1"})
	events := items(t, timeline, "events")
	if timeline["record"].(map[string]any)["revision"] != 12.0 ||
		fmt.Sprint(field(events, "event_id")) != "[evt-12b evt-11 evt-12 evt-10]" ||
		fmt.Sprint(field(events, "outcome")) != "[revision_conflict stale applied applied]" {
		t.Fatalf("record_timeline c-1: %v", timeline)
	}
	stale := items(t, callJSON(t, cs, "list_events", map[string]any{"outcome": "stale"}), "events")
	if fmt.Sprint(field(stale, "event_id")) != "[evt-11]" {
		t.Fatalf("list_events outcome=stale: %v", stale)
	}

	delivery := callJSON(t, cs, "inspect_delivery", map[string]any{"delivery_id": events[0]["delivery_id"]})
	if got := items(t, delivery, "events"); fmt.Sprint(field(got, "outcome")) != "[revision_conflict]" ||
		!strings.Contains(delivery["body"].(string), "B12") {
		t.Fatalf("inspect_delivery of evt-12b: %v", delivery)
	}

	open := items(t, callJSON(t, cs, "list_conflicts", map[string]any{"status": "open"}), "conflicts")
	if len(open) != 1 || open[0]["id"] != float64(d.ConflictID) {
		t.Fatalf("list_conflicts open: %v, want conflict %d", open, d.ConflictID)
	}
	conflict := callJSON(t, cs, "get_conflict", map[string]any{"conflict_id": d.ConflictID})
	if fmt.Sprint(conflict["differences"]) != "[map[accepted:A12 conflicting:B12 field:company] "+
		"map[accepted:customer conflicting:churned field:lead_status]]" ||
		conflict["conflict"].(map[string]any)["conflicting"].(map[string]any)["snapshot"].(map[string]any)["company"] != "B12" {
		t.Fatalf("get_conflict: %v", conflict)
	}
	if alerts := callJSON(t, cs, "list_alerts", nil); len(items(t, alerts, "alerts")) != 0 {
		t.Fatalf("list_alerts: %v", alerts)
	}

	first := callJSON(t, cs, "read_changes", map[string]any{"limit": 2})
	rest := callJSON(t, cs, "read_changes", map[string]any{"after": first["next_cursor"]})
	changed := append(items(t, first, "changes"), items(t, rest, "changes")...)
	if fmt.Sprint(field(changed, "event_id")) != "[evt-10 evt-12 evt-d1]" {
		t.Fatalf("read_changes in two pages: %v", changed)
	}

	resolved := callJSON(t, cs, "resolve_conflict", map[string]any{"conflict_id": d.ConflictID, "resolution": "keep", "note": "A12 is right"})
	if resolved["status"] != "kept" || resolved["note"] != "A12 is right" {
		t.Fatalf("resolve_conflict: %v", resolved)
	}
	replayed := callJSON(t, cs, "replay_delivery", map[string]any{"delivery_id": stale[0]["delivery_id"]})
	if fmt.Sprint(field(items(t, replayed, "results"), "outcome")) != "[duplicate]" {
		t.Fatalf("replay_delivery of evt-11: %v", replayed)
	}
	var audited []string
	for _, line := range e.AuditLog("acme") {
		if strings.HasPrefix(line, "assistant ") {
			audited = append(audited, strings.Fields(line)[1])
		}
	}
	if fmt.Sprint(audited) != "[conflict_resolve delivery_replay]" {
		t.Fatalf("audit entries of the token: %v in %v", audited, e.AuditLog("acme"))
	}
	if addresses := e.Strings(`SELECT client_address FROM audit_log WHERE actor = 'assistant'`); fmt.Sprint(addresses) != "[127.0.0.1 127.0.0.1]" {
		t.Fatalf("the audit entries' client addresses: %v, want the assistant's", addresses)
	}
}

// TestMCPReadOnlyToken: a read-only token sees no write tool, and calling
// one changes nothing.
func TestMCPReadOnlyToken(t *testing.T) {
	t.Parallel()
	e, d := webtest.APISetup(t)
	cs := connect(t, e, e.TokenWith("acme", domain.NewAPIToken{Name: "reader", Access: domain.TokenRead}))
	if names, _ := toolNames(t, cs); !slices.Equal(names, readTools) {
		t.Fatalf("a read-only token's tools: %v, want %v", names, readTools)
	}
	res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: "resolve_conflict",
		Arguments: map[string]any{"conflict_id": d.ConflictID, "resolution": "adopt"}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "resolve_conflict"`) {
		t.Fatalf("resolve_conflict with a read-only token: %+v, %v; want it refused as an unknown tool", res, err)
	}
	if open := items(t, callJSON(t, cs, "list_conflicts", map[string]any{"status": "open"}), "conflicts"); len(open) != 1 {
		t.Fatalf("open conflicts after a refused resolution: %v", open)
	}
	for _, args := range []map[string]any{{"limit": 101}, {"limit": 0}, {"outcome": "fine"}, {"tenant": "globex"}} {
		if res, err := cs.CallTool(ctx(t), &sdk.CallToolParams{Name: "list_events", Arguments: args}); err == nil && !res.IsError {
			t.Errorf("list_events %v: %+v, want it refused by the input schema", args, res.Content)
		}
	}
	if texts, isError := call(t, cs, "find_record", map[string]any{"provider": "crm", "object_type": "contact", "object_id": "nope"}); !isError ||
		!strings.Contains(texts[0], "404") {
		t.Fatalf("find_record of an unknown record: %v, want the API's 404", texts)
	}
}

// TestMCPRefusesBadTokens: the endpoint answers a missing or bad token as
// the API does, and an admin token, which names no tenant, 403.
func TestMCPRefusesBadTokens(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Operator("admin@example.com", true)
	admin, err := e.Store.CreateAdminToken(webtest.CliContext(), domain.NewAdminToken{Name: "a", CreatorEmail: "admin@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	revoked := e.Token("acme")
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now()`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, authorization string
		status              int
		challenge, error    string
	}{
		{"no token", "", http.StatusUnauthorized, `Bearer realm="tidemark"`, "missing API token"},
		{"a basic header", "Basic dTpw", http.StatusUnauthorized, `Bearer realm="tidemark"`, "missing API token"},
		{"an unknown token", "Bearer tmk_nope", http.StatusUnauthorized, `Bearer realm="tidemark", error="invalid_token"`, "invalid, expired or revoked"},
		{"a revoked token", "Bearer " + revoked, http.StatusUnauthorized, `Bearer realm="tidemark", error="invalid_token"`, "invalid, expired or revoked"},
		{"an admin token", "Bearer " + admin, http.StatusForbidden, "", "admin token"},
	} {
		req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/api/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.authorization != "" {
			req.Header.Set("Authorization", c.authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("WWW-Authenticate") != c.challenge || !strings.Contains(body.Error, c.error) {
			t.Errorf("%s: %d, WWW-Authenticate %q, error %q; want %d, %q, %q", c.name, resp.StatusCode,
				resp.Header.Get("WWW-Authenticate"), body.Error, c.status, c.challenge, c.error)
		}
	}
}

// TestMCPTenantIsolation: the token decides the tenant, and a tool never
// reaches another tenant's data, even named by its ids.
func TestMCPTenantIsolation(t *testing.T) {
	t.Parallel()
	e, acme := webtest.APISetup(t)
	globex := webtest.APIData{Tenant: "globex", Provider: "crm", Secret: e.Provider("globex", "crm"),
		Token: e.Token("globex"), Base: "/api/v1/tenants/globex"}
	webtest.APISeed(t, e, &globex, "g-")
	// globex's c-1 says another company.
	e.Outcome("globex", "crm", globex.Secret, "g-evt-13", webtest.SnapshotBody("c-1", 13, `{"company":"Globex"}`))

	acmeSession, globexSession := connect(t, e, acme.Token), connect(t, e, globex.Token)
	for _, c := range []struct {
		cs              *sdk.ClientSession
		own             string // the prefix of the tenant's event ids
		company         string
		otherConflict   int64
		otherDeliveryOf string // an event of the other tenant
	}{
		{acmeSession, "evt-", "A12", globex.ConflictID, "g-evt-10"},
		{globexSession, "g-evt-", "Globex", acme.ConflictID, "evt-10"},
	} {
		for _, ev := range items(t, callJSON(t, c.cs, "list_events", map[string]any{"limit": 100}), "events") {
			if !strings.HasPrefix(ev["event_id"].(string), c.own) {
				t.Errorf("list_events shows %v, another tenant's", ev["event_id"])
			}
		}
		record := callJSON(t, c.cs, "find_record", map[string]any{"provider": "crm", "object_type": "contact", "object_id": "c-1"})
		if record["snapshot"].(map[string]any)["company"] != c.company {
			t.Errorf("find_record c-1: %v, want the company %s", record, c.company)
		}
		if texts, isError := call(t, c.cs, "get_conflict", map[string]any{"conflict_id": c.otherConflict}); !isError || !strings.Contains(texts[0], "not found") {
			t.Errorf("get_conflict of another tenant's conflict: %v", texts)
		}
		var delivery string
		e.Store.Pool().QueryRow(context.Background(), `SELECT delivery_id::text FROM events WHERE event_id = $1`, c.otherDeliveryOf).Scan(&delivery)
		if texts, isError := call(t, c.cs, "inspect_delivery", map[string]any{"delivery_id": delivery}); !isError || !strings.HasPrefix(texts[0], "404") {
			t.Errorf("inspect_delivery of another tenant's delivery: %v", texts)
		}
		if texts, isError := call(t, c.cs, "replay_delivery", map[string]any{"delivery_id": delivery}); !isError || !strings.HasPrefix(texts[0], "404") {
			t.Errorf("replay_delivery of another tenant's delivery: %v", texts)
		}
		if texts, isError := call(t, c.cs, "resolve_conflict", map[string]any{"conflict_id": c.otherConflict, "resolution": "adopt"}); !isError || !strings.HasPrefix(texts[0], "404") {
			t.Errorf("resolve_conflict of another tenant's conflict: %v", texts)
		}
		for _, ch := range items(t, callJSON(t, c.cs, "read_changes", map[string]any{"limit": 100}), "changes") {
			if !strings.HasPrefix(ch["event_id"].(string), c.own) {
				t.Errorf("read_changes shows %v, another tenant's", ch["event_id"])
			}
		}
	}
}
