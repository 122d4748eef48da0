package alerting

import (
	"fmt"
	"time"
)

// Event types: what destinations subscribed to alert.* receive
// (docs/contract/destinations.md#alerts).
const (
	EventFired    = "alert.fired"
	EventResolved = "alert.resolved"
)

// EventTypes are the alert event types, in the order the contract lists
// them.
var EventTypes = []string{EventFired, EventResolved}

// Event is one firing or resolution of an alert, in the order of the
// tenant's alert_events: a destination sends them in that order, one at a
// time.
type Event struct {
	TenantID int64
	ID       int64  // its place in the tenant's alert events
	Type     string // EventFired or EventResolved
	At       time.Time
	// Alert is the alert as the event shows it: for a firing, unresolved
	// with the value it fired with; for a resolution, resolved with the
	// value it resolved with.
	Alert Alert
}

// MessageID is the event's stable unique id across tenants: the
// webhook-id of a destination's message, what a consumer deduplicates on.
func (e Event) MessageID() string { return fmt.Sprintf("alert_%d_%d", e.TenantID, e.ID) }
