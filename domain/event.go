package domain

import (
	"encoding/json"
	"time"
)

// Outcome is what Tidemark did with one event. Exactly one per event.
type Outcome string

// The outcomes of CONTRACT section 1.
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
	Seq          int // position in the delivery, from 0
	EventID      string
	Scope        ScopeName
	ObjectID     string
	Revision     *int64          // nil: no trustworthy revision
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
	Body       []byte // kept only when the signature was valid but the body unusable
}
