package domain

import (
	"context"
	"errors"
	"time"
)

// The journal (docs/contract/apps.md#the-journal): a node reads the change
// journal of each installed portal with tokens (HubSpot's Webhooks
// Journal) and writes each page it read as one delivery whose source is
// SourceJournal. Where it stopped, the install's offset, moves in the
// transaction of that delivery, so that a crash neither skips nor repeats
// a page.

// JournalCursor is where the journal of an install was read to.
type JournalCursor struct {
	TenantID, InstallID int64
	// Offset is the last entry written; "" before the first, when reading
	// starts from the journal's earliest entry.
	Offset      string
	MovedAt     time.Time // when Offset last moved; zero before
	EntriesRead int64     // journal entries written, in all
	FoundMissed int64     // of their events, those applied: changes the webhooks had missed
	Expirations int64     // how often the offset had expired and the gap was filled by search
	ExpiredAt   time.Time // the last expiry; zero if none
}

// JournalMove is a page's move of an install's offset: From the offset the
// page was read after ("" from the earliest entry), To its last entry's.
type JournalMove struct {
	TenantID, InstallID int64
	From, To            string
	Entries             int
}

// JournalRestart is an expired offset cleared after its gap was filled.
type JournalRestart struct {
	TenantID, InstallID int64
	From                string // the expired offset
	FoundMissed         int    // changes the gap's search applied
	Target, Summary     string // the audit entry's: the install, what happened
}

// ErrJournalMoved is a move whose From is no longer the install's offset:
// another node wrote the page first. The page's delivery was rolled back;
// the reader reads the cursor again.
var ErrJournalMoved = errors.New("the journal's offset moved meanwhile: another node read this page")

// AuditAppJournalExpired is audited in the tenant's log when an install's
// offset had expired: the gap was filled by search and reading started
// again from the earliest entry.
const AuditAppJournalExpired = "app_journal_expired"

// JournalService keeps the cursors of the installs' journals.
type JournalService interface {
	// LeaseJournal takes, for holder, the install's journal for ttl (its
	// cursor created at no offset when missing) and returns its cursor;
	// false when another holder's lease runs still. A holder may take
	// its own lease again.
	LeaseJournal(ctx context.Context, tenantID, installID int64, holder string, ttl time.Duration) (JournalCursor, bool, error)
	// ReleaseJournal gives holder's lease back.
	ReleaseJournal(ctx context.Context, tenantID, installID int64, holder string) error
	// IngestJournal writes a page's delivery as Ingest does and, in its
	// transaction, moves the offset from m.From to m.To, adding m.Entries
	// and the events applied to the cursor's counts. An error wrapping
	// ErrJournalMoved when the offset is no longer m.From: nothing is
	// written.
	IngestJournal(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event, m JournalMove) ([]Result, error)
	// RestartJournal clears an expired offset (ErrJournalMoved when it is
	// no longer r.From), so that reading starts again from the earliest
	// entry, counts the expiry with the changes the search found missed,
	// and audits it in the tenant's log.
	RestartJournal(ctx context.Context, r JournalRestart) error
}
