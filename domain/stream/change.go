package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// The change stream out (docs/contract/changes.md): every accepted change
// of a tenant's records, at a position of the tenant's feed given in commit
// order. Stale, duplicate, redundant, conflicting, unversioned and rejected
// events are never changes.

// ChangeType names what a change did to its record.
type ChangeType string

// The change types.
const (
	ChangeApplied ChangeType = "record.applied" // a snapshot or a property change was applied
	ChangeDeleted ChangeType = "record.deleted" // the provider deleted the record (HubSpot)
	ChangeReset   ChangeType = "record.reset"   // an owner reset the record's revision
	ChangeErased  ChangeType = "record.erased"  // an owner erased the record
)

// ChangeTypes are the change types, in the order the contract lists them.
var ChangeTypes = []ChangeType{ChangeApplied, ChangeDeleted, ChangeReset, ChangeErased}

// Change is one accepted change of a record.
type Change struct {
	TenantID         int64
	Position         int64 // its place in the tenant's feed
	Type             ChangeType
	Provider         string
	ObjectType       string
	ObjectID         string
	Revision         *int64
	PreviousRevision *int64   // nil for the record's first change
	Changed          []string // top-level snapshot fields that differ from the previous snapshot
	Snapshot         json.RawMessage
	EventID          string // empty for a reset or an erasure
	DeliveryID       string
	CommittedAt      time.Time
}

// ID is the change's stable unique id, across tenants: what a consumer
// deduplicates on (the webhook-id of a destination's message).
func (c Change) ID() string { return fmt.Sprintf("chg_%d_%d", c.TenantID, c.Position) }

// Cursor is the feed cursor that follows this change.
func (c Change) Cursor() string { return FormatCursor(c.Position) }

// cursorPrefix marks a feed cursor; the rest is a position. Consumers treat
// cursors as opaque.
const cursorPrefix = "c1_"

// FormatCursor is the cursor after position (0: before the first change).
func FormatCursor(position int64) string { return cursorPrefix + strconv.FormatInt(position, 10) }

// ParseCursor reads a cursor of FormatCursor; the empty cursor is the
// start of the feed.
func ParseCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	n, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != rest {
		return 0, domain.Errorf(domain.EINVALID, "after: %q is not a cursor of this feed; pass a next_cursor the feed returned", s)
	}
	return n, nil
}

// Feed page bounds and the longest wait.
const (
	DefaultChangeLimit = 100
	MaxChangeLimit     = 1000
	MaxChangeWait      = 60 * time.Second
	// MaxChangePageBytes bounds a page by its changes' snapshots and
	// changed lists, as JSON: the change that would pass it starts the
	// next page, and one bigger than it comes alone. A page is held in
	// memory until its consumer has it.
	MaxChangePageBytes = 8 << 20
)

// ChangeFilter narrows the feed to a provider or an object type; zero
// fields match everything.
type ChangeFilter struct {
	Provider   string
	ObjectType string
}

// ChangeQuery asks for the changes after a position.
type ChangeQuery struct {
	After int64
	Limit int
	ChangeFilter
}

// ChangeFeed reads a tenant's feed.
type ChangeFeed interface {
	// Changes lists up to q.Limit changes after q.After that match q's
	// filter, in position order, and stops before they pass
	// MaxChangePageBytes. A position is never listed before every change
	// before it has committed or aborted.
	Changes(ctx context.Context, tenantID int64, q ChangeQuery) ([]Change, error)
	// ChangeHead is the tenant's latest committed position (0 for none):
	// what a node polls for the tenant's waiting readers.
	ChangeHead(ctx context.Context, tenantID int64) (int64, error)
}
