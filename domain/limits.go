package domain

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// The most an event may carry, in bytes of UTF-8 (docs/contract/webhooks.md#limits).
// PostgreSQL refuses an index entry larger than about 2.7 kB, and every
// identifier below ends up in one (records, events, scopes, people, accounts,
// campaign memberships), several of them in the same entry. An event over a
// limit is rejected before it reaches the database, so a signed delivery
// never fails with a 500 that its provider would retry for days.
const (
	MaxEventIDBytes    = 1024
	MaxObjectIDBytes   = 255
	MaxObjectTypeBytes = 200
	MaxActionBytes     = 200
	MaxPropertyBytes   = 255
	MaxEmailBytes      = 254 // the longest address SMTP carries
	MaxNameBytes       = 255
	MaxCompanyBytes    = 255
	MaxCampaignBytes   = 255
	MaxDomainBytes     = 253 // the longest DNS name
	MaxSourceBytes     = 255
	// MaxJSONDepth is how deeply a snapshot or a JSON payload may nest
	// objects and arrays ({} is one level).
	MaxJSONDepth = 64
)

// ApplyLimits returns e rejected, with a reason naming the first field over
// its limit, when it carries more than the limits allow; otherwise e as it
// is. A receiver's own reason gives way, since it may quote the oversize
// value. What is over a limit is dropped from the rejected event too (the
// object id, the object type, the snapshot; the event id is cut), because
// the event log would refuse it as well; the raw payload is kept.
func ApplyLimits(e Event) Event {
	reason := limitViolation(e)
	if reason == "" {
		return e
	}
	e.RejectReason, e.Lead = reason, nil
	if len(e.EventID) > MaxEventIDBytes {
		e.EventID = cut(e.EventID, MaxEventIDBytes)
	}
	if len(e.ObjectID) > MaxObjectIDBytes {
		e.ObjectID = ""
	}
	if len(e.Scope.ObjectType) > MaxObjectTypeBytes || len(e.Scope.Action) > MaxActionBytes {
		// Without an object type no scope is created for it.
		e.Scope = ScopeName{Action: cut(e.Scope.Action, MaxActionBytes)}
	}
	if len(e.Property) > MaxPropertyBytes {
		e.Property = ""
	}
	if JSONDepth(e.Snapshot) > MaxJSONDepth {
		e.Snapshot = nil
	}
	return e
}

// bounded is one field and its limit.
type bounded struct {
	name  string
	value string
	max   int
}

// limitViolation says which field of e is over its limit, or "".
func limitViolation(e Event) string {
	fields := []bounded{
		{"event id", e.EventID, MaxEventIDBytes},
		{"object type", e.Scope.ObjectType, MaxObjectTypeBytes},
		{"action", e.Scope.Action, MaxActionBytes},
		{"object id", e.ObjectID, MaxObjectIDBytes},
		{"property", e.Property, MaxPropertyBytes},
	}
	if l := e.Lead; l != nil {
		fields = append(fields,
			bounded{"email", l.Email, MaxEmailBytes}, bounded{"name", l.Name, MaxNameBytes},
			bounded{"company", l.Company, MaxCompanyBytes}, bounded{"domain", l.Domain, MaxDomainBytes},
			bounded{"campaign", l.Campaign, MaxCampaignBytes}, bounded{"source", l.Source, MaxSourceBytes})
	}
	for _, f := range fields {
		if len(f.value) > f.max {
			return fmt.Sprintf("%s is %d bytes; at most %d are accepted", f.name, len(f.value), f.max)
		}
	}
	if d := JSONDepth(e.Snapshot); d > MaxJSONDepth {
		return fmt.Sprintf("the snapshot nests %d levels deep; at most %d are accepted", d, MaxJSONDepth)
	}
	if p := bytes.TrimLeft(e.Payload, " \t\r\n"); len(p) > 0 && (p[0] == '{' || p[0] == '[') {
		if d := JSONDepth(p); d > MaxJSONDepth {
			return fmt.Sprintf("the event as received nests %d levels deep; at most %d are accepted", d, MaxJSONDepth)
		}
	}
	return ""
}

// JSONDepth returns how deeply raw nests objects and arrays ({} and [] are
// one level, a scalar none). It scans bytes, skipping strings, without
// decoding anything, so a hostile document costs no allocation; raw is not
// validated.
func JSONDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
