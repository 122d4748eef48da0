package domain

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Outcome is what Tidemark did with one event. Exactly one per event.
type Outcome string

// The outcomes of docs/contract/webhooks.md#outcomes.
const (
	Applied          Outcome = "applied"
	Duplicate        Outcome = "duplicate"
	EventConflict    Outcome = "event_conflict"
	Stale            Outcome = "stale"
	Redundant        Outcome = "redundant"
	RevisionConflict Outcome = "revision_conflict"
	Unversioned      Outcome = "unversioned"
	Rejected         Outcome = "rejected"
)

// Outcomes lists every outcome in display order.
var Outcomes = []Outcome{Applied, Duplicate, EventConflict, Stale, Redundant, RevisionConflict, Unversioned, Rejected}

// DeliveryRejected counts deliveries refused before any event was read (bad
// signature, old timestamp, oversize, malformed body). It is stored beside
// the event outcomes in the counters but is not an event outcome.
const DeliveryRejected = "delivery_rejected"

// OutcomeLabel is an outcome (or DeliveryRejected) as every console page
// and message shows it ("revision conflict"); the API and the filters keep
// the machine values.
func OutcomeLabel(o string) string {
	if o == DeliveryRejected {
		return "rejected delivery"
	}
	return strings.ReplaceAll(o, "_", " ")
}

// ValidOutcome reports whether s names an outcome.
func ValidOutcome(s string) bool {
	for _, o := range Outcomes {
		if string(o) == s {
			return true
		}
	}
	return false
}

// ContactType is the object type the console centres on; its records are
// named by contact_id in payloads and answers.
const ContactType = "contact"

// Event is one change inside a delivery, as a receiver parsed it. An event
// the receiver found malformed has RejectReason set and may lack the rest.
type Event struct {
	Seq      int // position in the delivery, from 0
	EventID  string
	Scope    ScopeName
	ObjectID string
	Revision *int64 // nil: no trustworthy revision
	// RevisionTime is the instant Revision stands for, for kinds whose
	// revision is a timestamp; zero otherwise. An event dated further ahead
	// of the database's clock than the provider's MaxFutureSkew is rejected.
	RevisionTime time.Time
	Snapshot     json.RawMessage // a JSON object
	Timestamp    string          // the provider's event time, as sent
	Payload      []byte          // the raw event as received
	RejectReason string
	// Property, when set, makes the event a change of one property of the
	// record (HubSpot propertyChange): Snapshot is {property: value}, it is
	// merged into the stored snapshot, and Revision orders the changes of
	// that property only. PropertyCreated and PropertyDeleted mark the
	// record's creation and deletion at Revision (Snapshot is {}).
	Property string
	// Lead, when set, makes the event a lead signup: find or create the
	// person, account, follow-up task and campaign membership.
	Lead *Lead
}

// Pseudo-properties of creation and deletion events.
const (
	PropertyCreated = "$created"
	PropertyDeleted = "$deleted"
)

// Result is the outcome of one event, as answered to the provider.
type Result struct {
	EventID         string
	ObjectType      string
	ObjectID        string
	Revision        *int64
	CurrentRevision *int64
	Outcome         Outcome
	Reason          string
	ConflictID      int64
}

// LoggedEvent is an entry of the event log.
type LoggedEvent struct {
	DeliveryID string
	Seq        int
	EventID    string
	Provider   string
	ObjectType string
	Action     string
	ObjectID   string
	Revision   *int64
	Outcome    Outcome
	Reason     string
	ReceivedAt time.Time
	ConflictID int64
	Source     string // its delivery's: SourceBackfill, or "" for a webhook
	// Headline is the part of the snapshot that matched the query's
	// Search, with matches between HighlightStart and HighlightStop.
	Headline string
	Matches  []FieldMatch // the snapshot's fields the Search matched (EventLogPage only)
}

// EventLogQuery narrows the event log; zero fields match everything.
type EventLogQuery struct {
	Provider   string
	ObjectType string
	ObjectID   string
	Outcome    Outcome
	From       time.Time       // received at or after
	Before     time.Time       // received before
	Contains   json.RawMessage // a JSON object the event's snapshot must contain
	Search     string          // words of the event's snapshot (websearch syntax)
}

// Validate returns an EINVALID error describing the first unusable filter.
func (q EventLogQuery) Validate() error {
	if err := validUTF8("provider", q.Provider, "object type", q.ObjectType, "record", q.ObjectID, "snapshot", string(q.Contains)); err != nil {
		return err
	}
	if q.Outcome != "" && !ValidOutcome(string(q.Outcome)) {
		return Errorf(EINVALID, "unknown outcome %q", q.Outcome)
	}
	if !q.From.IsZero() && !q.Before.IsZero() && !q.From.Before(q.Before) {
		return Errorf(EINVALID, "the start of the time range must be before its end")
	}
	if err := ValidateSearch(q.Search); err != nil {
		return err
	}
	if len(q.Contains) > 0 {
		var obj map[string]json.RawMessage
		if !json.Valid(q.Contains) || json.Unmarshal(q.Contains, &obj) != nil || obj == nil {
			return Errorf(EINVALID, `the snapshot filter must be a JSON object, such as {"job_title": "Director"}`)
		}
	}
	return nil
}

// EventLogChoices are the values the event-log filters offer.
type EventLogChoices struct {
	Providers   []string // provider names
	ObjectTypes []string // object types of the tenant's scopes
}

// EventDetail is one event as stored, with its delivery.
type EventDetail struct {
	LoggedEvent
	Payload  []byte          // the raw event as received
	Snapshot json.RawMessage // the parsed snapshot; nil when the event had none
	Delivery DeliveryBrief
}

// EventService serves the event log: the filtered, keyset-paginated list
// and one event in detail.
type EventService interface {
	// EventLog returns one page of the tenant's events matching q, newest
	// first (by received time, delivery and position), and the cursor of the
	// next page ("" on the last). An invalid query or cursor is an EINVALID
	// error; a search stopped by the read timeout is ErrReadTimeout.
	EventLog(ctx context.Context, tenantID int64, q EventLogQuery, page Page) ([]LoggedEvent, string, error)
	// EventLogPage is EventLog paged both ways, counted when page.Count asks.
	EventLogPage(ctx context.Context, tenantID int64, q EventLogQuery, page Page) ([]LoggedEvent, PageInfo, error)
	// EventLogChoices lists what the filters can choose from.
	EventLogChoices(ctx context.Context, tenantID int64) (EventLogChoices, error)
	// EventDetail returns one event with its raw payload and its delivery,
	// or an ENOTFOUND error.
	EventDetail(ctx context.Context, tenantID int64, deliveryID string, seq int) (EventDetail, error)
	// EventOutcome returns the outcome of the newest event of the provider
	// with that event id received since since, or ENOTFOUND; a console test
	// event reads its outcome here when the kind's answer does not carry it.
	EventOutcome(ctx context.Context, tenantID, providerID int64, eventID string, since time.Time) (Outcome, error)
	// FindEvent returns the delivery and position of the newest event of the
	// record with that event id, or ENOTFOUND: timelines and conflicts name
	// events by the provider's id, the console links them to the event.
	FindEvent(ctx context.Context, tenantID int64, ref RecordRef, eventID string) (deliveryID string, seq int, err error)
}
