package domain

import (
	"encoding/json"
	"time"
)

// Record is the current snapshot of one object of a provider.
type Record struct {
	Provider         string
	ObjectType       string
	ObjectID         string
	Revision         int64
	Snapshot         json.RawMessage
	ApplicationCount int
	LastAppliedEvent string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// RecordRef names a record.
type RecordRef struct {
	Provider   string
	ObjectType string
	ObjectID   string
}

// Revision is one accepted snapshot of a record. ConflictID is set when an
// operator adopted the snapshot from a revision conflict.
type Revision struct {
	ID         int64
	Revision   int64
	EventID    string
	Snapshot   json.RawMessage
	AppliedAt  time.Time
	ConflictID int64
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
}

// EventFilter narrows the event log; empty fields match everything.
type EventFilter struct {
	Provider   string
	ObjectType string
	ObjectID   string
	Outcome    Outcome
}

// Conflict statuses and resolutions.
const (
	ConflictOpen    = "open"
	ConflictKept    = "kept"
	ConflictAdopted = "adopted"

	ResolveKeep  = "keep"
	ResolveAdopt = "adopt"
)

// Conflict is a revision conflict: two snapshots that claim the same
// revision of one record.
type Conflict struct {
	ID                  int64
	Provider            string
	ObjectType          string
	ObjectID            string
	Revision            int64
	AcceptedEventID     string
	AcceptedSnapshot    json.RawMessage
	ConflictingEventID  string
	ConflictingSnapshot json.RawMessage
	Status              string
	Note                string
	ResolvedBy          string
	ResolvedAt          *time.Time
	DetectedAt          time.Time
}

// Page asks for one page of a keyset-paginated list.
type Page struct {
	Limit  int
	Cursor string
}

// Page size bounds of the API.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)
