package domain

import (
	"context"
	"encoding/json"
	"time"
)

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

// MaxConflictNote bounds the note an operator leaves on a resolution.
const MaxConflictNote = 2000

// ConflictService serves revision conflicts: the API's pages, the
// console's queue and detail, and their resolution.
type ConflictService interface {
	// Conflicts pages through the tenant's conflicts with that status
	// ("" for all), oldest first.
	Conflicts(ctx context.Context, tenantID int64, status string, page Page) ([]Conflict, string, error)
	// ConflictQueue returns the oldest open conflicts (up to openLimit) and
	// the most recently resolved ones (up to resolvedLimit), without their
	// snapshots.
	ConflictQueue(ctx context.Context, tenantID int64, openLimit, resolvedLimit int) (ConflictQueue, error)
	// ConflictDetail returns one conflict with the current state of its
	// record, or an ENOTFOUND error.
	ConflictDetail(ctx context.Context, tenantID, conflictID int64) (ConflictDetail, error)
	// ResolveConflict keeps or adopts the conflicting snapshot, recorded in
	// the audit log with the actor of ctx. Adopting returns an ECONFLICT
	// error when the record has moved past the revision.
	ResolveConflict(ctx context.Context, tenantID, conflictID int64, resolution, note, by string) (Conflict, error)
}
