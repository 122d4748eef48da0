package views

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDiffFields(t *testing.T) {
	t.Parallel()
	old := json.RawMessage(`{"name":"Ada","tags":["a","b"],"n":1.50,"gone":null,"nested":{"b":1,"a":2}}`)
	after := json.RawMessage(`{"name":"Ada L.","tags":["a","b"],"n":1.50,"added":"<b>&</b>","nested":{"a":2,"b":1}}`)
	got := DiffFields(old, after)
	want := []FieldDiff{
		{Field: "added", OldMissing: true, New: `"<b>&</b>"`},
		{Field: "gone", Old: "null", NewMissing: true},
		{Field: "n", Old: "1.50", New: "1.50"},
		{Field: "name", Old: `"Ada"`, New: `"Ada L."`},
		{Field: "nested", Old: `{"a":2,"b":1}`, New: `{"a":2,"b":1}`},
		{Field: "tags", Old: `["a","b"]`, New: `["a","b"]`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DiffFields:\n got %+v\nwant %+v", got, want)
	}
	var changed []string
	for _, d := range ChangedFields(old, after) {
		changed = append(changed, d.Field)
	}
	if !reflect.DeepEqual(changed, []string{"added", "gone", "name"}) {
		t.Fatalf("ChangedFields: %v", changed)
	}
}

func TestDiffFieldsAgainstNothing(t *testing.T) {
	t.Parallel()
	got := ChangedFields(nil, json.RawMessage(`{"a":1}`))
	if len(got) != 1 || !got[0].OldMissing || got[0].New != "1" {
		t.Fatalf("first snapshot: %+v", got)
	}
	if got := DiffFields(json.RawMessage(`[1]`), json.RawMessage(`"x"`)); len(got) != 0 {
		t.Fatalf("non-objects: %+v", got)
	}
}

func TestJSONText(t *testing.T) {
	t.Parallel()
	raw := json.RawMessage(`{ "b": "<script>", "a": 12345678901234567890 }`)
	if got := CompactJSON(raw); got != `{"a":12345678901234567890,"b":"<script>"}` {
		t.Errorf("CompactJSON: %s", got)
	}
	if got := IndentJSON(raw); got != "{\n  \"a\": 12345678901234567890,\n  \"b\": \"<script>\"\n}" {
		t.Errorf("IndentJSON: %s", got)
	}
	if got := CompactJSON(json.RawMessage(`not json`)); got != "not json" {
		t.Errorf("invalid JSON: %s", got)
	}
}
