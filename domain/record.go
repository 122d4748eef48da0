package domain

import (
	"context"
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

// TimelineOutcomes are the event outcomes a record's timeline shows beside
// its accepted revisions: everything Tidemark received for the record and
// did not apply. (Applied events are the accepted revisions themselves;
// rejected events may not name a record reliably.)
var TimelineOutcomes = []Outcome{Stale, Duplicate, Unversioned, Redundant, RevisionConflict, EventConflict}

// Timeline is the history of one record as received and decided.
type Timeline struct {
	Ref     RecordRef
	Record  *Record // nil when no snapshot was ever accepted
	Entries []TimelineEntry
}

// TimelineEntry is either an accepted revision (Accepted set) or an event
// that was not applied, with its outcome.
type TimelineEntry struct {
	At       time.Time
	Accepted bool
	Outcome  Outcome // for events
	Revision *int64  // nil for unversioned events
	EventID  string
	Reason   string
	// ConflictID is the conflict an event opened, or, on an accepted
	// revision, the conflict an operator adopted it from.
	ConflictID int64
	// Snapshot and Previous are the accepted snapshot and the one accepted
	// before it (nil for the first); set on accepted revisions only.
	Snapshot json.RawMessage
	Previous json.RawMessage
}

// RecordService serves what Tidemark holds of each record: its current
// snapshot, its accepted revisions and its timeline. Every method returns an
// ENOTFOUND error for a record outside the tenant.
type RecordService interface {
	Record(ctx context.Context, tenantID int64, ref RecordRef) (Record, error)
	// Revisions pages through the record's accepted revisions, newest first.
	Revisions(ctx context.Context, tenantID int64, ref RecordRef, page Page) ([]Revision, string, error)
	// RecordTimeline returns the record's current state and its latest
	// timeline entries (up to limit), newest first. An unknown provider, or
	// a record with neither a snapshot nor timeline events, is an ENOTFOUND
	// error.
	RecordTimeline(ctx context.Context, tenantID int64, ref RecordRef, limit int) (Timeline, error)
	// ContactProviders lists, by name, the providers of the tenant that have
	// a timeline for the contact: a record or a timeline event.
	ContactProviders(ctx context.Context, tenantID int64, contactID string) ([]string, error)
}
