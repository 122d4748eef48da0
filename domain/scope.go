package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ScopeName is the object type and action part of a scope; the provider is
// the third part.
type ScopeName struct {
	ObjectType string
	Action     string
}

func (n ScopeName) String() string { return n.ObjectType + "." + n.Action }

// Scope settings. TTL bounds how long an idempotency key is remembered.
type Scope struct {
	ScopeName
	TTL            time.Duration
	IdentifierRule IdentifierRule
	Enabled        bool
}

// Bounds of a scope's idempotency TTL. Providers retry for hours (a day
// and more for some), and a key forgotten sooner turns a retry into a new
// event, so the smallest TTL is a day.
const (
	DefaultTTL = 7 * 24 * time.Hour
	MinTTL     = 24 * time.Hour
	MaxTTL     = 90 * 24 * time.Hour
)

// DefaultScope is the scope created on first use.
func DefaultScope(name ScopeName) Scope {
	return Scope{ScopeName: name, TTL: DefaultTTL, IdentifierRule: IdentifierRule{}, Enabled: true}
}

// ValidateTTL checks an operator-chosen TTL.
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return Errorf(EINVALID, "TTL must be between 24 hours and 90 days, got %s", ttl)
	}
	return nil
}

// MinRetention is the shortest time the event and delivery logs may be kept.
const MinRetention = 7 * 24 * time.Hour

// ValidateRetention checks how long the logs are kept against MinRetention
// and against the largest scope TTL in use, which ttlOwner names (largestTTL
// is 0 when there are no scopes): a key that outlives its events would
// answer "duplicate" for an event the log no longer shows.
func ValidateRetention(retention, largestTTL time.Duration, ttlOwner string) error {
	if retention < MinRetention {
		return Errorf(EINVALID, "retention must be at least 7 days (168h), got %s; pass a longer --retention", FormatDuration(retention))
	}
	if retention < largestTTL {
		return Errorf(EINVALID, "retention %s is shorter than the %s TTL of %s; pass --retention %s or more, or lower that TTL",
			FormatDuration(retention), FormatDuration(largestTTL), ttlOwner, FormatDuration(largestTTL))
	}
	return nil
}

// FormatDuration writes d as a flag would take it: 720h, not 720h0m0s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// IdentifierRule says what identifies an event within its scope: the
// provider's event id (the zero rule), or the object id plus the event
// timestamp, or the object id plus chosen snapshot fields.
type IdentifierRule struct {
	Timestamp bool     // object id + the event's timestamp
	Fields    []string // object id + these snapshot fields
}

// ParseIdentifierRule reads the stored form: "event_id", "object_id+timestamp"
// or "object_id+fields:a,b".
func ParseIdentifierRule(s string) (IdentifierRule, error) {
	switch {
	case s == "event_id" || s == "":
		return IdentifierRule{}, nil
	case s == "object_id+timestamp":
		return IdentifierRule{Timestamp: true}, nil
	case strings.HasPrefix(s, "object_id+fields:"):
		var fields []string
		for _, f := range strings.Split(strings.TrimPrefix(s, "object_id+fields:"), ",") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, f)
			}
		}
		if len(fields) == 0 {
			return IdentifierRule{}, Errorf(EINVALID, "identifier rule %q names no fields", s)
		}
		return IdentifierRule{Fields: fields}, nil
	}
	return IdentifierRule{}, Errorf(EINVALID, `identifier rule %q is not one of "event_id", "object_id+timestamp", "object_id+fields:a,b"`, s)
}

func (r IdentifierRule) String() string {
	switch {
	case r.Timestamp:
		return "object_id+timestamp"
	case len(r.Fields) > 0:
		return "object_id+fields:" + strings.Join(r.Fields, ",")
	}
	return "event_id"
}

// Identifier applies the rule to an event.
func (r IdentifierRule) Identifier(e Event) string {
	switch {
	case r.Timestamp:
		return e.ObjectID + "@" + e.Timestamp
	case len(r.Fields) > 0:
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(e.Snapshot, &fields) // a rejected event has no snapshot; its key is never claimed
		var b strings.Builder
		b.WriteString(e.ObjectID)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "|%s=%s", f, compactJSON(fields[f]))
		}
		return b.String()
	}
	return e.EventID
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys
	return string(b)
}

// IdempotencyKey hashes tenant, provider, scope and identifier. Each part is
// length-prefixed so that no two different tuples hash alike.
func IdempotencyKey(tenantID, providerID int64, scope ScopeName, identifier string) []byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(tenantID))
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(providerID))
	h.Write(n[:])
	for _, part := range []string{scope.ObjectType, scope.Action, identifier} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return h.Sum(nil)
}

// ValidateScopeName checks an operator-entered scope: the object type may
// not contain a dot, since a delivery's type is split at its first dot.
func ValidateScopeName(n ScopeName) error {
	switch {
	case n.ObjectType == "" || n.Action == "":
		return Errorf(EINVALID, "a scope needs an object type and an action, for example contact and snapshot")
	case strings.Contains(n.ObjectType, "."):
		return Errorf(EINVALID, "object type %q may not contain a dot", n.ObjectType)
	case len(n.ObjectType)+len(n.Action) > 199:
		return Errorf(EINVALID, "object type and action together must be shorter than 200 characters")
	}
	return nil
}
