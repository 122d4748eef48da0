package mcp

import (
	"encoding/json"
	"testing"
)

// TestDifferences: get_conflict's differences name each field whose value
// differs, nested ones by path, with both values; a side without the
// field has no value, and a null is a value.
func TestDifferences(t *testing.T) {
	t.Parallel()
	accepted := `{"email":"a@example.com","address":{"city":"Lyon","zip":"69001"},"tags":["a"],"phone":null,"owner":"ann"}`
	conflicting := `{"email":"a@example.com","address":{"city":"Paris","zip":"69001"},"tags":["a","b"],"phone":"+33","team":7}`
	got := string(marshal(differences(json.RawMessage(accepted), json.RawMessage(conflicting))))
	want := `[{"field":"address.city","accepted":"Lyon","conflicting":"Paris"},` +
		`{"field":"owner","accepted":"ann"},` +
		`{"field":"phone","accepted":null,"conflicting":"+33"},` +
		`{"field":"tags","accepted":["a"],"conflicting":["a","b"]},` +
		`{"field":"team","conflicting":7}]`
	if got != want {
		t.Fatalf("differences:\n got %s\nwant %s", got, want)
	}
	if got := string(marshal(differences(json.RawMessage(`{}`), json.RawMessage(`{}`)))); got != "[]" {
		t.Fatalf("differences of two empty snapshots: %s", got)
	}
}
