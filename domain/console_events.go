package domain

import (
	"context"
	"encoding/json"
	"time"
)

// EventLogService serves event history: the filtered, keyset-paginated
// event log and the detail of one event.
type EventLogService interface {
	// EventLog returns one page of the tenant's events matching q, newest
	// first (by received time, delivery and position), and the cursor of the
	// next page ("" on the last). An invalid query or cursor is an EINVALID
	// error; a search stopped by the statement timeout is ErrEventLogTimeout.
	EventLog(ctx context.Context, tenantID int64, q EventLogQuery, page Page) ([]LoggedEvent, string, error)
	// EventLogChoices lists what the filters can choose from.
	EventLogChoices(ctx context.Context, tenantID int64) (EventLogChoices, error)
	// EventDetail returns one event with its raw payload and its delivery,
	// or an ENOTFOUND error.
	EventDetail(ctx context.Context, tenantID int64, deliveryID string, seq int) (EventDetail, error)
}

// EventLogTimeout bounds one event-log search, so that a search the
// indexes cannot answer fails fast instead of holding a connection.
const EventLogTimeout = 3 * time.Second

// ErrEventLogTimeout is returned when a search ran into EventLogTimeout.
var ErrEventLogTimeout = &Error{Code: EUNAVAILABLE,
	Message: "The search took longer than 3 seconds and was stopped. Narrow it: choose a time range, a provider or a record id."}

// EventLogQuery narrows the event log; zero fields match everything.
type EventLogQuery struct {
	Provider   string
	ObjectType string
	ObjectID   string
	Outcome    Outcome
	From       time.Time       // received at or after
	Before     time.Time       // received before
	Contains   json.RawMessage // a JSON object the event's snapshot must contain
}

// Validate returns an EINVALID error describing the first unusable filter.
func (q EventLogQuery) Validate() error {
	if q.Outcome != "" && !ValidOutcome(string(q.Outcome)) {
		return Errorf(EINVALID, "unknown outcome %q", q.Outcome)
	}
	if !q.From.IsZero() && !q.Before.IsZero() && !q.From.Before(q.Before) {
		return Errorf(EINVALID, "the start of the time range must be before its end")
	}
	if len(q.Contains) > 0 {
		var obj map[string]json.RawMessage
		if !json.Valid(q.Contains) || json.Unmarshal(q.Contains, &obj) != nil || obj == nil {
			return Errorf(EINVALID, `the snapshot filter must be a JSON object, such as {"job_title": "Director"}`)
		}
	}
	return nil
}

// EventLogChoices are the values the event-log filters offer.
type EventLogChoices struct {
	Providers   []string // provider names
	ObjectTypes []string // object types of the tenant's scopes
}

// EventDetail is one event as stored, with its delivery.
type EventDetail struct {
	LoggedEvent
	Payload  []byte          // the raw event as received
	Snapshot json.RawMessage // the parsed snapshot; nil when the event had none
	Delivery DeliveryBrief
}
