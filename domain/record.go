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
	// DeletedRevision is the revision of the provider's deletion of the
	// record (HubSpot), nil while it is not deleted.
	DeletedRevision *int64
	// ResetAt is when an owner last reset the record; while Revision is
	// ForgottenRevision the next event applies whatever its revision.
	ResetAt *time.Time
}

// ForgottenRevision is the stored revision of a reset record: lower than
// every revision an event can carry, so the next one applies.
const ForgottenRevision = -1

// Forgotten is true when the record was reset and no event applied since.
func (r Record) Forgotten() bool { return r.Revision == ForgottenRevision }

// RecordRef names a record.
type RecordRef struct {
	Provider   string
	ObjectType string
	ObjectID   string
}

// AuditTarget names the record in the audit log, which is append-only
// and outlives an erasure: by a keyed hash of its id (IDHasher.HashedID),
// which may be personal data such as an email.
func (r RecordRef) AuditTarget(h IDHasher) string {
	return r.Provider + "/" + r.ObjectType + "/" + h.HashedID(r.ObjectID)
}

// AuditTargets are every name the audit log has had for the record, for
// looking its entries up: under h, by the unkeyed hash of entries written
// before the key, and by the raw id of those written before ids were
// hashed.
func (r RecordRef) AuditTargets(h IDHasher) []string {
	return []string{r.AuditTarget(h), r.AuditTarget(LegacyIDHasher), r.Provider + "/" + r.ObjectType + "/" + r.ObjectID}
}

// Audit actions of record repair.
const (
	ActionRecordReset = "record_reset"
	ActionRecordErase = "record_erase"
	ActionLeadErase   = "lead_erase"
)

// Erasure counts what an erase removed content from.
type Erasure struct {
	Records   int64 // records deleted (0 or 1)
	Revisions int64 // accepted revisions deleted
	Events    int64 // events of the event log left without content
	Conflicts int64 // conflicts left without snapshots (open ones closed)
	Bodies    int64 // delivery bodies removed (NULL) or redacted (ErasedBody)
	People    int64 // people deleted, with their tasks and campaign memberships
}

// ErasedBody replaces the stored body of a delivery that carried an erased
// record's events together with other events (a HubSpot batch): the body
// cannot be split, so it goes whole; the other events keep their own raw
// payloads in the event log.
const ErasedBody = `{"tidemark":"body erased with a record it carried"}`

// ConfirmRepair checks the typed confirmation of a reset or erase: the
// record id (or the email of a lead), exactly as shown.
func ConfirmRepair(want, typed string) error {
	if typed != want {
		return Errorf(EINVALID, "type %q exactly to confirm; you typed %q", want, typed)
	}
	return nil
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
// did not apply, rejected events that name it included. (Applied events
// are the accepted revisions themselves.)
var TimelineOutcomes = []Outcome{Stale, Duplicate, Unversioned, Redundant, RevisionConflict, EventConflict, Rejected}

// Timeline is the history of one record as received and decided.
type Timeline struct {
	Ref     RecordRef
	Record  *Record // nil when no snapshot was ever accepted
	Badges  RecordBadges
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
	// Replay is set when the event came in a replay of a stored delivery,
	// and Source names where a delivery no provider sent came from
	// (backfill, journal; "" for a provider's).
	Replay bool
	Source string
	// ConflictID is the conflict an event opened, or, on an accepted
	// revision, the conflict an operator adopted it from.
	ConflictID int64
	// Repair is set on an owner's reset or erase (ActionRecordReset,
	// ActionRecordErase), made by By; the other fields are then empty.
	Repair string
	By     string
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
	// RecordDirectory returns one page of the tenant's records matching q,
	// most recently changed first (object id breaking ties), and the cursor
	// of the next page ("" after the last).
	RecordDirectory(ctx context.Context, tenantID int64, q RecordQuery, page Page) ([]RecordSummary, string, error)
	// RecordDirectoryPage is RecordDirectory paged both ways, counted when page.Count asks.
	RecordDirectoryPage(ctx context.Context, tenantID int64, q RecordQuery, page Page) ([]RecordSummary, PageInfo, error)

	// ResetRecord forgets the record's revision (the snapshot stays until
	// the next event, which applies whatever its revision) and returns the
	// record as reset. An unknown record is an ENOTFOUND error.
	ResetRecord(ctx context.Context, tenantID int64, ref RecordRef) (Record, error)
	// EraseRecord deletes the record and its accepted revisions, and
	// removes its snapshots and payloads from the event log, its conflicts
	// and the delivery bodies that carried its events, keeping the outcome
	// rows. A record with neither a snapshot nor events is ENOTFOUND.
	EraseRecord(ctx context.Context, tenantID int64, ref RecordRef) (Erasure, error)
	// EraseLead deletes the person of the email (with tasks and campaign
	// memberships) and the content of every lead signup event naming it.
	// An email with neither is ENOTFOUND.
	EraseLead(ctx context.Context, tenantID int64, email string) (Erasure, error)
}
