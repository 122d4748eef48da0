package domain

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestIdentifierRules(t *testing.T) {
	t.Parallel()
	e := Event{EventID: "msg_1", ObjectID: "c-1", Timestamp: "2026-11-29T10:00:00Z",
		Snapshot: json.RawMessage(`{"email":"a@example.com","score":{"b":2,"a":1}}`)}
	for _, tc := range []struct{ rule, want string }{
		{"event_id", "msg_1"},
		{"", "msg_1"},
		{"object_id+timestamp", "c-1@2026-11-29T10:00:00Z"},
		// Field values are canonical JSON, so key order does not matter.
		{"object_id+fields:email, score", `c-1|email="a@example.com"|score={"a":1,"b":2}`},
		{"object_id+fields:missing", "c-1|missing="},
	} {
		r, err := ParseIdentifierRule(tc.rule)
		if err != nil {
			t.Fatalf("%q: %v", tc.rule, err)
		}
		if got := r.Identifier(e); got != tc.want {
			t.Errorf("%q: identifier %q, want %q", tc.rule, got, tc.want)
		}
		if again, _ := ParseIdentifierRule(r.String()); again.Identifier(e) != tc.want {
			t.Errorf("%q does not survive String and Parse", tc.rule)
		}
	}
	for _, bad := range []string{"object_id+fields:", "eventid", "object_id"} {
		if _, err := ParseIdentifierRule(bad); ErrorCode(err) != EINVALID {
			t.Errorf("%q: %v, want an EINVALID error", bad, err)
		}
	}
}

func TestIdempotencyKeyIsUnambiguous(t *testing.T) {
	t.Parallel()
	a := IdempotencyKey(1, 2, ScopeName{"contact", "snapshot"}, "x")
	for name, other := range map[string][]byte{
		"tenant":      IdempotencyKey(2, 2, ScopeName{"contact", "snapshot"}, "x"),
		"provider":    IdempotencyKey(1, 3, ScopeName{"contact", "snapshot"}, "x"),
		"object type": IdempotencyKey(1, 2, ScopeName{"deal", "snapshot"}, "x"),
		"action":      IdempotencyKey(1, 2, ScopeName{"contact", "update"}, "x"),
		"shifted":     IdempotencyKey(1, 2, ScopeName{"contacts", "napshot"}, "x"),
	} {
		if bytes.Equal(a, other) {
			t.Errorf("another %s gives the same key", name)
		}
	}
	if !bytes.Equal(a, IdempotencyKey(1, 2, ScopeName{"contact", "snapshot"}, "x")) {
		t.Error("the key is not deterministic")
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"acme", "a", "acme-2", "0x"} {
		if err := ValidateSlug("tenant", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-acme", "Acme", "acme_2", string(make([]byte, 64))} {
		if ValidateSlug("tenant", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if ValidateTTL(23*time.Hour) == nil || ValidateTTL(91*24*time.Hour) == nil || ValidateTTL(24*time.Hour) != nil || ValidateTTL(DefaultTTL) != nil {
		t.Error("TTL bounds are not 24 hours to 90 days")
	}
}
