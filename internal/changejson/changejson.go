// Package changejson is the one JSON form of a change (docs/contract/changes.md):
// the feed's items, and the data of a destination's messages.
package changejson

import (
	"encoding/json"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
)

// Change is a change as the feed and destinations show it.
type Change struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Provider         string          `json:"provider"`
	ObjectType       string          `json:"object_type"`
	ObjectID         string          `json:"object_id"`
	Revision         *int64          `json:"revision"`
	PreviousRevision *int64          `json:"previous_revision"`
	Changed          []string        `json:"changed"`
	Snapshot         json.RawMessage `json:"snapshot"`
	EventID          *string         `json:"event_id"`
	DeliveryID       *string         `json:"delivery_id"`
	CommittedAt      string          `json:"committed_at"`
}

// From is c's JSON form. Times are UTC RFC 3339 with microseconds, as
// PostgreSQL keeps them, so that two changes of one second stay in order.
func From(c stream.Change) Change {
	j := Change{ID: c.ID(), Type: string(c.Type), Provider: c.Provider, ObjectType: c.ObjectType, ObjectID: c.ObjectID,
		Revision: c.Revision, PreviousRevision: c.PreviousRevision, Changed: c.Changed, Snapshot: c.Snapshot,
		CommittedAt: Time(c.CommittedAt)}
	if j.Changed == nil {
		j.Changed = []string{}
	}
	if len(j.Snapshot) == 0 {
		j.Snapshot = json.RawMessage("null")
	}
	if c.EventID != "" {
		j.EventID = &c.EventID
	}
	if c.DeliveryID != "" {
		j.DeliveryID = &c.DeliveryID
	}
	return j
}

// Time formats a commit time.
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

// Message is the body of a destination's message: the change type, its
// commit time and the change.
type Message struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      Change `json:"data"`
}

// MarshalMessage is the body of c's message; data, when not nil, is its
// data instead of the change (a destination's transform).
func MarshalMessage(c stream.Change, data json.RawMessage) ([]byte, error) {
	j := From(c)
	if data != nil {
		return json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{j.Type, j.CommittedAt, data})
	}
	return json.Marshal(Message{Type: j.Type, Timestamp: j.CommittedAt, Data: j})
}
