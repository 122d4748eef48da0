package domain

import (
	"context"
	"encoding/json"
	"time"
)

// ConflictService serves the conflict queue, conflict detail and contact
// timelines. Resolving a conflict goes through QueryService.ResolveConflict.
type ConflictService interface {
	// ConflictQueue returns the oldest open conflicts (up to openLimit) and
	// the most recently resolved ones (up to resolvedLimit), without their
	// snapshots.
	ConflictQueue(ctx context.Context, tenantID int64, openLimit, resolvedLimit int) (ConflictQueue, error)
	// ConflictDetail returns one conflict with the current state of its
	// record, or an ENOTFOUND error.
	ConflictDetail(ctx context.Context, tenantID, conflictID int64) (ConflictDetail, error)
	// RecordTimeline returns the record's current state and its latest
	// timeline entries (up to limit), newest first. An unknown provider, or
	// a record with neither a snapshot nor timeline events, is an ENOTFOUND
	// error.
	RecordTimeline(ctx context.Context, tenantID int64, ref RecordRef, limit int) (Timeline, error)
	// TimelineProviders lists the names of the tenant's providers, by name.
	TimelineProviders(ctx context.Context, tenantID int64) ([]string, error)
	// ContactProviders lists, by name, the providers of the tenant that have
	// a timeline for the contact: a record or a timeline event.
	ContactProviders(ctx context.Context, tenantID int64, contactID string) ([]string, error)
}

// ConflictQueue is what the conflict review queue shows.
type ConflictQueue struct {
	Open      []Conflict // oldest first
	OpenTotal int        // every open conflict, including those beyond the limit
	Resolved  []Conflict // latest resolution first
}

// ConflictDetail is a conflict with the current state of its record;
// Current is nil when the record no longer exists.
type ConflictDetail struct {
	Conflict
	Current *Record
}

// MovedOn reports whether the record has moved past the conflict's
// revision (or is gone), so that adopting the conflicting snapshot is no
// longer possible: it would roll the record back.
func (d ConflictDetail) MovedOn() bool {
	return d.Current == nil || d.Current.Revision != d.Revision
}

// TimelineOutcomes are the event outcomes a record's timeline shows beside
// its accepted revisions: everything Tidemark received for the record and
// did not apply. (Applied events are the accepted revisions themselves;
// rejected events may not name a record reliably.)
var TimelineOutcomes = []Outcome{Stale, Duplicate, Unversioned, Redundant, RevisionConflict, EventConflict}

// MaxConflictNote bounds the note an operator leaves on a resolution.
const MaxConflictNote = 2000

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
