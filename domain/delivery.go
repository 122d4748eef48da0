package domain

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Signature verdicts stored with each delivery.
const (
	SignatureValid     = "valid"
	SignatureInvalid   = "invalid"
	SignatureMissing   = "missing"
	SignatureExpired   = "expired"
	SignatureUnchecked = "unchecked" // rejected before the signature could be checked (oversize)
)

// Delivery is one HTTP request from a provider.
type Delivery struct {
	ID         string // UUIDv7, time-ordered
	TenantID   int64
	ProviderID int64
	ReceivedAt time.Time
	Status     int
	Signature  string
	Reason     string
	Body       []byte  // kept only when the sender was authenticated
	Request    Request // what the request said, credentials redacted
	ReplayOf   string  // the delivery this one replays; "" for one that arrived
	// ReplayOfAt is when ReplayOf was received, which locates its events:
	// a replay's events that say what they said refer to them.
	ReplayOfAt time.Time
	Source     string // SourceBackfill, SourceJournal, SourceCDC, or "" for one a provider sent
}

// SourceBackfill is the source of a delivery Tidemark made of records it
// pulled from the provider's API (a backfill) rather than received.
const SourceBackfill = "backfill"

// SourceJournal is the source of a delivery Tidemark made of a page of a
// provider's change journal (HubSpot's Webhooks Journal) that it read.
const SourceJournal = "journal"

// Pulled reports whether a delivery of source was read from the
// provider's API (a backfill, the journal or Change Data Capture) rather
// than received.
func Pulled(source string) bool {
	return source == SourceBackfill || source == SourceJournal || source == SourceCDC
}

// Request is what a delivery's HTTP request said, as the delivery log keeps
// it: credentials redacted (RedactValue), headers and query within bounds.
type Request struct {
	Method        string
	Path          string
	Query         string              // the raw query, without "?"
	Headers       map[string][]string // canonical name to values
	Truncated     bool                // headers or the query were cut to their bounds
	ClientAddress string
}

// Bounds of what the delivery log keeps of a request's headers and query:
// a sender controls them, and they are stored with every delivery.
const (
	MaxKeptHeaders     = 64       // header names
	MaxKeptHeaderBytes = 16 << 10 // names and values together
	MaxKeptHeaderValue = 1024     // one value; a longer one is cut
	MaxKeptQuery       = 2048
)

// redactedPrefix is how many characters of a credential the delivery log
// keeps, enough to tell two secrets apart, never enough to use one.
const redactedPrefix = 4

// RedactValue is a credential as the delivery log keeps it: its first four
// characters and an ellipsis. A value of eight characters or fewer keeps
// nothing, so that half of a short secret is never shown.
func RedactValue(v string) string {
	if utf8.RuneCountInString(v) <= 2*redactedPrefix {
		return "…"
	}
	n := 0
	for i := range v {
		if n == redactedPrefix {
			return v[:i] + "…"
		}
		n++
	}
	return v
}

// CredentialName reports whether a header or query parameter of that name
// carries a credential by the generic rule: any name with auth, key, sig,
// token, secret, password, session, credential or cookie in it. The rule
// errs on the side of redacting: a name it catches needlessly only shows
// less. Provider kinds add the names they know (internal/provider).
func CredentialName(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"auth", "key", "sig", "token", "secret", "password", "session", "credential", "cookie"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// CaptureRequest returns what the delivery log keeps of a request: the
// values of the headers that secretHeader names and of the query
// parameters that secretQuery names redacted, the rest as sent, within the
// bounds above (headers by name in order; Truncated says something was
// left out or cut).
func CaptureRequest(method, path, rawQuery string, header map[string][]string, client string,
	secretHeader, secretQuery func(name string) bool) Request {
	r := Request{Method: method, Path: path, ClientAddress: client}
	r.Query, r.Truncated = redactQuery(rawQuery, secretQuery)
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	slices.Sort(names)
	r.Headers = make(map[string][]string, min(len(names), MaxKeptHeaders))
	budget := MaxKeptHeaderBytes
	for _, name := range names {
		if len(r.Headers) == MaxKeptHeaders || len(name) > budget {
			r.Truncated = true
			break
		}
		budget -= len(name)
		var kept []string
		for _, v := range header[name] {
			if secretHeader(name) {
				v = RedactValue(v)
			}
			if len(v) > MaxKeptHeaderValue {
				v, r.Truncated = cut(v, MaxKeptHeaderValue), true
			}
			if len(v) > budget {
				v, r.Truncated = cut(v, budget), true
			}
			budget -= len(v)
			kept = append(kept, v)
		}
		r.Headers[name] = kept
	}
	return r
}

// redactQuery redacts the values of credential parameters in a raw query,
// keeping the rest byte for byte, and cuts it to MaxKeptQuery.
func redactQuery(raw string, secret func(name string) bool) (string, bool) {
	if raw == "" {
		return "", false
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		key, value, hasValue := strings.Cut(part, "=")
		name, err := url.QueryUnescape(key)
		if err != nil {
			name = key
		}
		if hasValue && secret(name) {
			if v, err := url.QueryUnescape(value); err == nil {
				value = v
			}
			parts[i] = key + "=" + RedactValue(value)
		}
	}
	q := strings.Join(parts, "&")
	if len(q) > MaxKeptQuery {
		return cut(q, MaxKeptQuery), true
	}
	return q, false
}

// DeliveryBrief is what the console shows of one delivery.
type DeliveryBrief struct {
	ID         string
	Provider   string
	ReceivedAt time.Time
	Status     int
	Signature  string
	Reason     string
	EventCount int
	ReplayOf   string // the delivery this one replays, if it is a replay
	Source     string // SourceBackfill, SourceJournal, SourceCDC, or "" for one a provider sent
	// Outcomes counts its events by outcome; only the console's lists
	// (DeliveryLog, ReplaysOf, ReplayJobDeliveries) fill it.
	Outcomes map[string]int64
}

// DeliveryLogPage is one page of a list of deliveries paged both ways,
// newest first: Older and Newer are the cursors (Page.Cursor,
// Page.Before) of the pages around it, "" when there is none.
type DeliveryLogPage struct {
	Deliveries   []DeliveryBrief
	Older, Newer string
}

// DeliveryDetail is one delivery as stored, for the inspector.
type DeliveryDetail struct {
	DeliveryBrief
	TenantSlug   string
	ProviderKind string
	Request      Request
	Body         []byte // nil when it was not kept
	Events       []DeliveryEvent
	AnsweredAt   time.Time // when its transaction wrote it (migration 00035); zero for a refusal or an older one
	Replays      []string  // ids of the deliveries that replayed this one, oldest first: the first DefaultPageLimit
	MoreReplays  string    // the cursor of DeliveryReplays' next page; "" when Replays lists them all
}

// BodyKept reports whether the delivery's body was stored: only an
// authenticated sender's is (a 200, or a 400 whose body was unusable).
func (d DeliveryDetail) BodyKept() bool { return d.Body != nil }

// Replayable returns nil when the delivery can be replayed, or an
// ECONFLICT error saying why not.
func (d DeliveryDetail) Replayable() error {
	switch {
	case d.ReplayOf != "":
		return Errorf(ECONFLICT, "delivery %s is itself a replay; replay the original, %s", d.ID, d.ReplayOf)
	case Pulled(d.Source):
		return Errorf(ECONFLICT, "delivery %s was pulled from the provider's API (%s), not received: run a backfill again instead", d.ID, d.Source)
	case string(d.Body) == ErasedBody:
		return Errorf(ECONFLICT, "delivery %s cannot be replayed: its body was erased with a record it carried", d.ID)
	case d.Body == nil || d.Signature != SignatureValid:
		return Errorf(ECONFLICT, "delivery %s cannot be replayed: its body was not kept (answered %d, signature %s); "+
			"only the body of an authenticated sender is stored", d.ID, d.Status, d.Signature)
	case d.Request.Method == "":
		return Errorf(ECONFLICT, "delivery %s cannot be replayed: it was stored before Tidemark kept the request's "+
			"headers, which parsing needs", d.ID)
	}
	return nil
}

// DeliveryEvent is one event of a delivery with its outcome.
type DeliveryEvent struct {
	Seq        int
	EventID    string
	ObjectType string
	Action     string
	ObjectID   string
	Revision   *int64
	Outcome    Outcome
	Reason     string
}

// DeliveryFilter narrows the delivery log; zero fields match everything.
type DeliveryFilter struct {
	Provider string
	Status   int       // the HTTP status answered
	Class    int       // the class of the status answered: 2 for 2xx (accepted), 4 for 4xx; not with Status
	Outcome  Outcome   // deliveries with at least one event of this outcome
	From     time.Time // received at or after
	Before   time.Time // received before
}

// Validate returns an EINVALID error describing the first unusable filter.
func (f DeliveryFilter) Validate() error {
	if f.Outcome != "" && !ValidOutcome(string(f.Outcome)) {
		return Errorf(EINVALID, "unknown outcome %q", f.Outcome)
	}
	if f.Class != 0 && (f.Class < 1 || f.Class > 5 || f.Status != 0) {
		return Errorf(EINVALID, "a status class is 1 to 5 (2xx to 5xx), without a status")
	}
	if f.Status != 0 && (f.Status < 100 || f.Status > 599) {
		return Errorf(EINVALID, "status must be an HTTP status such as 200 or 400, got %d", f.Status)
	}
	if !f.From.IsZero() && !f.Before.IsZero() && !f.From.Before(f.Before) {
		return Errorf(EINVALID, "the start of the time range must be before its end")
	}
	return nil
}

// String says what f matches, for the audit log: "provider crm, status
// 200, outcome rejected, from 2026-11-29T10:00:00Z" or "every delivery".
func (f DeliveryFilter) String() string {
	var parts []string
	if f.Provider != "" {
		parts = append(parts, "provider "+f.Provider)
	}
	if f.Status != 0 {
		parts = append(parts, fmt.Sprintf("status %d", f.Status))
	}
	if f.Class != 0 {
		parts = append(parts, fmt.Sprintf("status %dxx", f.Class))
	}
	if f.Outcome != "" {
		parts = append(parts, "outcome "+string(f.Outcome))
	}
	if !f.From.IsZero() {
		parts = append(parts, "from "+f.From.UTC().Format(time.RFC3339))
	}
	if !f.Before.IsZero() {
		parts = append(parts, "before "+f.Before.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "every delivery"
	}
	return strings.Join(parts, ", ")
}

// DeliveryService serves the delivery log to the inspector.
type DeliveryService interface {
	// Delivery returns one delivery with its request, body and events, or
	// ENOTFOUND for an id that is not one of the tenant's deliveries.
	Delivery(ctx context.Context, tenantID int64, id string) (DeliveryDetail, error)
	// Deliveries lists the tenant's deliveries that f matches, newest
	// first, a keyset page at a time; the cursor is "" on the last page.
	Deliveries(ctx context.Context, tenantID int64, f DeliveryFilter, p Page) ([]DeliveryBrief, string, error)
	// DeliveryReplays lists the ids of the deliveries that replayed
	// delivery id, oldest first, a keyset page at a time (Delivery has the
	// first); the cursor is "" on the last page.
	DeliveryReplays(ctx context.Context, tenantID int64, id string, p Page) ([]string, string, error)
	// DeliveryLog is Deliveries paged both ways, with the outcomes of each.
	DeliveryLog(ctx context.Context, tenantID int64, f DeliveryFilter, p Page) (DeliveryLogPage, error)
	// CountDeliveries counts what f matches, up to limit+1 (more than limit).
	CountDeliveries(ctx context.Context, tenantID int64, f DeliveryFilter, limit int) (int64, error)
	// ReplaysOf lists the replays of delivery id with their outcomes, newest
	// first, paged both ways.
	ReplaysOf(ctx context.Context, tenantID int64, id string, p Page) (DeliveryLogPage, error)
}

// IngestService is what webhook receivers need from storage.
type IngestService interface {
	// Endpoint returns the provider with its secrets and scopes, or an
	// ENOTFOUND error when the tenant or provider does not exist.
	Endpoint(ctx context.Context, tenantSlug, providerName string) (ProviderEndpoint, error)
	// Ingest records the delivery and decides and stores the outcome of each
	// event, in order, in one transaction. Nothing is stored on error.
	Ingest(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event) ([]Result, error)
	// LogRefusals records refused deliveries in one round trip: each count
	// is added to its provider's count of refusals for its minute (which
	// the refusals alert sums) and to its DeliveryRejected counter for its
	// hour, and each sample is kept with its reason for the console. Counts
	// and samples of a provider that no longer exists are dropped.
	LogRefusals(ctx context.Context, counts []RefusalCount, samples []Delivery) error
	// LogOverloads adds deliveries refused for overload to their tenant's
	// counts per hour and reason, in one round trip. Counts of a tenant
	// that does not exist (a made-up name) are dropped.
	LogOverloads(ctx context.Context, counts []OverloadCount) error
}

// RefusalCount is how many deliveries of one provider were refused within
// one minute.
type RefusalCount struct {
	TenantID   int64
	ProviderID int64
	Minute     time.Time // the start of the minute, UTC (RefusalMinute)
	N          int64
}

// RefusalMinute is the minute a delivery received at at is counted in.
func RefusalMinute(at time.Time) time.Time { return at.UTC().Truncate(time.Minute) }
