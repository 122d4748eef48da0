package domain_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json  string
		depth int
	}{
		{``, 0},
		{`12`, 0},
		{`"{[{["`, 0},
		{`{}`, 1},
		{`[[], {}, [[]]]`, 3},
		{`{"a": "}}}]]]", "b": [{"c": "\"[[["}]}`, 3},
		{`{"a\\": "[", "b": {}}`, 2},
		{strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100), 100},
	} {
		if got := domain.JSONDepth([]byte(tc.json)); got != tc.depth {
			t.Errorf("JSONDepth(%.40s) = %d, want %d", tc.json, got, tc.depth)
		}
	}
}

func TestApplyLimits(t *testing.T) {
	t.Parallel()
	rev := int64(1)
	good := domain.Event{EventID: "e1", Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, ObjectID: "c-1",
		Revision: &rev, Snapshot: json.RawMessage(`{"a":{"b":1}}`), Payload: []byte(`{"type":"contact.snapshot"}`)}
	deep := strings.Repeat(`[`, domain.MaxJSONDepth+1) + strings.Repeat(`]`, domain.MaxJSONDepth+1)
	lead := domain.Lead{Email: "ada@example.com", Domain: "example.com", Campaign: "launch"}
	for _, tc := range []struct {
		name   string
		change func(e *domain.Event)
		reason string
		check  func(e domain.Event) bool // what the rejected event keeps
	}{
		{"within limits", func(e *domain.Event) {}, "", nil},
		{"at the limits", func(e *domain.Event) {
			e.EventID, e.ObjectID = strings.Repeat("e", domain.MaxEventIDBytes), strings.Repeat("o", domain.MaxObjectIDBytes)
			e.Scope = domain.ScopeName{ObjectType: strings.Repeat("t", domain.MaxObjectTypeBytes), Action: strings.Repeat("a", domain.MaxActionBytes)}
			e.Snapshot = json.RawMessage(deep[1 : len(deep)-1])
		}, "", nil},
		{"event id", func(e *domain.Event) { e.EventID = strings.Repeat("é", 600) },
			"event id is 1200 bytes; at most 1024 are accepted",
			func(e domain.Event) bool { return e.EventID == strings.Repeat("é", 512) && e.ObjectID == "c-1" }},
		{"object id", func(e *domain.Event) { e.ObjectID = strings.Repeat("o", 3000) },
			"object id is 3000 bytes; at most 255 are accepted",
			func(e domain.Event) bool {
				return e.ObjectID == "" && e.EventID == "e1" && e.Scope.ObjectType == "contact"
			}},
		{"object type", func(e *domain.Event) { e.Scope.ObjectType = strings.Repeat("t", 201) },
			"object type is 201 bytes; at most 200 are accepted",
			func(e domain.Event) bool { return e.Scope == domain.ScopeName{Action: "snapshot"} }},
		{"action", func(e *domain.Event) { e.Scope.Action = strings.Repeat("a", 300) },
			"action is 300 bytes; at most 200 are accepted",
			func(e domain.Event) bool { return e.Scope == domain.ScopeName{Action: strings.Repeat("a", 200)} }},
		{"property", func(e *domain.Event) { e.Property = strings.Repeat("p", 256) },
			"property is 256 bytes; at most 255 are accepted", func(e domain.Event) bool { return e.Property == "" }},
		{"deep snapshot", func(e *domain.Event) { e.Snapshot = json.RawMessage(deep) },
			"the snapshot nests 65 levels deep; at most 64 are accepted", func(e domain.Event) bool { return e.Snapshot == nil }},
		{"deep payload", func(e *domain.Event) { e.Payload = []byte(" \n" + deep) },
			"the event as received nests 65 levels deep; at most 64 are accepted",
			func(e domain.Event) bool { return len(e.Payload) > 0 && e.Snapshot != nil }},
		{"XML payload is not JSON", func(e *domain.Event) { e.Payload = []byte("<x>" + deep + "</x>") }, "", nil},
		{"lead within limits", func(e *domain.Event) { l := lead; e.Lead = &l }, "", nil},
		{"email", func(e *domain.Event) { l := lead; l.Email = strings.Repeat("a", 250) + "@x.io"; e.Lead = &l },
			"email is 255 bytes; at most 254 are accepted", func(e domain.Event) bool { return e.Lead == nil }},
		{"campaign", func(e *domain.Event) { l := lead; l.Campaign = strings.Repeat("c", 3000); e.Lead = &l },
			"campaign is 3000 bytes; at most 255 are accepted", func(e domain.Event) bool { return e.Lead == nil }},
		{"domain", func(e *domain.Event) { l := lead; l.Domain = strings.Repeat("d", 254); e.Lead = &l },
			"domain is 254 bytes; at most 253 are accepted", nil},
		{"name", func(e *domain.Event) { l := lead; l.Name = strings.Repeat("n", 256); e.Lead = &l }, "name is 256 bytes", nil},
		{"company", func(e *domain.Event) { l := lead; l.Company = strings.Repeat("c", 256); e.Lead = &l }, "company is 256 bytes", nil},
		{"source", func(e *domain.Event) { l := lead; l.Source = strings.Repeat("s", 256); e.Lead = &l }, "source is 256 bytes", nil},
		{"over a limit, the limit's reason wins", func(e *domain.Event) {
			e.ObjectID, e.RejectReason = strings.Repeat("o", 3000), `data.email "ooo…" is not a valid email address`
		}, "object id is 3000 bytes", nil},
		{"within limits, the receiver's reason stays", func(e *domain.Event) { e.RejectReason = "data.campaign is required" },
			"data.campaign is required", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := good
			tc.change(&e)
			got := domain.ApplyLimits(e)
			if tc.reason == "" && !reflect.DeepEqual(got, e) {
				t.Fatalf("an event within the limits changed: %+v", got)
			}
			if !strings.HasPrefix(got.RejectReason, tc.reason) {
				t.Fatalf("reason %q, want %q", got.RejectReason, tc.reason)
			}
			if tc.check != nil && !tc.check(got) {
				t.Errorf("rejected event kept %+v", got)
			}
		})
	}
}
