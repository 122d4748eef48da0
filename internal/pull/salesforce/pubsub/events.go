package pubsub

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// The source of these events' ids, so that reading a change event twice
// makes the same ids (a duplicate) and no webhook id collides with them.
const eventIDPrefix = "cdc"

// Events turns a change event into the events of its records, and names
// the records to read again through the REST API: a gap event's
// recordIds, and those of an UPDATE whose diffFields carry a diff rather
// than the values. A GAP_OVERFLOW has neither: the caller backfills its
// entity over the transaction's window.
//
// Each record id of a merged event gets its own events. The object type
// is the entity's name in lower case, as the outbound message parser and
// the backfill name it (contact, invoice__c). The revision is the commit
// timestamp in microseconds, the unit of the outbound messages' and the
// backfill's SystemModstamp revisions, so that a change they brought too
// is redundant rather than newer. Two changes of one record in the same
// millisecond (a transaction's several changes, told apart by
// sequenceNumber) have one revision. The caller writes events in replay
// order, each change event's in a round after the previous one's, so the
// first change of a field in that millisecond applies and a later one is
// redundant when its value agrees, a revision_conflict for the queue when
// it does not: Salesforce's order within a millisecond is not trusted
// over an operator's review.
//
//   - CREATE: the record's creation, then one property change per field
//     with a value and one of Id.
//   - UPDATE: one property change per changed or nulled field (null for
//     a nulled one, as an outbound message's xsi:nil).
//   - DELETE: the record's deletion, as the backfill reads getDeleted.
//   - UNDELETE: a whole snapshot of the record (Id and its fields), as the
//     backfill reads an undeleted record: newer than the deletion, so it
//     applies.
//
// Event ids are cdc:<object type>:<id>:<field>:<commitTimestamp>:<sequenceNumber>.
func Events(ch ChangeEvent) (events []domain.Event, reread []string) {
	h := ch.Header
	if ch.Gap {
		return nil, slices.Clone(h.RecordIDs)
	}
	typ := strings.ToLower(h.EntityName)
	micros := h.CommitTimestamp * 1000
	at := time.UnixMilli(h.CommitTimestamp).UTC()
	stamp := at.Format("2006-01-02T15:04:05.000Z")
	names := make([]string, 0, len(ch.Fields))
	for name := range ch.Fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, id := range h.RecordIDs {
		base := domain.Event{Scope: domain.ScopeName{ObjectType: typ}, ObjectID: id, Timestamp: stamp,
			Revision: &micros, RevisionTime: at, Snapshot: json.RawMessage(`{}`)}
		change := func(action, property string, snapshot map[string]*string) domain.Event {
			e := base
			e.Scope.Action, e.Property = action, property
			field := property
			if field == "" {
				field = action
			}
			e.EventID = fmt.Sprintf("%s:%s:%s:%s:%d:%d", eventIDPrefix, typ, id, field, h.CommitTimestamp, h.SequenceNumber)
			if snapshot != nil {
				e.Snapshot, _ = json.Marshal(snapshot)
			}
			e.Payload, _ = json.Marshal(payload{Source: domain.SourceCDC, ReplayID: ch.ReplayID, Header: h, RecordID: id, Snapshot: snapshot})
			return e
		}
		switch h.ChangeType {
		case ChangeCreate:
			// Id too, as outbound messages and the backfill keep it.
			events = append(events, change("creation", domain.PropertyCreated, nil),
				change("propertyChange", "Id", map[string]*string{"Id": &id}))
			for _, name := range names {
				events = append(events, change("propertyChange", name, map[string]*string{name: ch.Fields[name]}))
			}
		case ChangeUpdate:
			for _, name := range names {
				events = append(events, change("propertyChange", name, map[string]*string{name: ch.Fields[name]}))
			}
			if len(h.DiffFields) > 0 {
				reread = append(reread, id)
			}
		case ChangeDelete:
			events = append(events, change("deletion", domain.PropertyDeleted, nil))
		case ChangeUndelete:
			snapshot := map[string]*string{"Id": &id}
			for _, name := range names {
				snapshot[name] = ch.Fields[name]
			}
			events = append(events, change("undelete", "", snapshot))
		default:
			e := change("unsupported", "", nil)
			e.Revision, e.RevisionTime, e.Snapshot = nil, time.Time{}, nil
			e.RejectReason = fmt.Sprintf("unsupported Salesforce change type %.40q; Tidemark reads CREATE, UPDATE, DELETE, UNDELETE and the GAP_ events", h.ChangeType)
			events = append(events, e)
		}
	}
	return events, reread
}

// payload is what an event keeps of the change event it came from.
type payload struct {
	Source   string             `json:"source"`
	ReplayID []byte             `json:"replayId"`
	Header   Header             `json:"header"`
	RecordID string             `json:"recordId"`
	Snapshot map[string]*string `json:"fields,omitempty"`
}
