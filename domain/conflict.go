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

// ConflictQueue is what the conflict review queue shows: a page of open
// conflicts, oldest first, and a page of resolved ones, latest resolution
// first, each with the cursors to its neighbouring pages.
type ConflictQueue struct {
	Open          []Conflict
	OpenPages     PageCursors
	OpenTotal     int // every open conflict
	Resolved      []Conflict
	ResolvedPages PageCursors
	ResolvedTotal int // resolved conflicts, counted up to ConflictCountBound + 1
}

// ConflictCountBound is how many resolved conflicts the queue counts: past
// it, the queue says "more than" rather than count them all.
const ConflictCountBound = 1000

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
	// ConflictQueue returns a page of the open conflicts, oldest first, and
	// one of the resolved ones, latest resolution first, without their
	// snapshots. A malformed cursor is an EINVALID error.
	ConflictQueue(ctx context.Context, tenantID int64, open, resolved Page) (ConflictQueue, error)
	// OpenNeighbours returns the open conflicts just before and just after
	// one in the queue's order; 0 where there is none.
	OpenNeighbours(ctx context.Context, tenantID, conflictID int64) (prev, next int64, err error)
	// ConflictDetail returns one conflict with the current state of its
	// record, or an ENOTFOUND error.
	ConflictDetail(ctx context.Context, tenantID, conflictID int64) (ConflictDetail, error)
	// ResolveConflict keeps or adopts the conflicting snapshot, recorded in
	// the audit log with the actor of ctx. Adopting returns an ECONFLICT
	// error when the record has moved past the revision.
	ResolveConflict(ctx context.Context, tenantID, conflictID int64, resolution, note, by string) (Conflict, error)
}
