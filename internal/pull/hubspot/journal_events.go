package hubspot

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
)

// A page of the journal becomes the events the webhook parser
// (internal/provider/hubspot.go, hubspotEvent) makes of the same changes,
// revised at the entry's occurredAt as a webhook event is, so that the
// ingest's per-property guard finds a change the webhooks brought redundant
// and applies one they missed.

// journalObjectTypes name the CRM's object type ids as the webhooks do
// (https://developers.hubspot.com/docs/guides/api/crm/understanding-the-crm,
// "Object type IDs").
var journalObjectTypes = map[string]string{"0-1": "contact", "0-2": "company", "0-3": "deal"}

// The subscription type of privacy deletions (the spec's enum).
const subscriptionGDPR = "GDPR_PRIVACY_DELETION"

// JournalErasure is a record a GDPR_DELETE entry erases.
type JournalErasure struct{ ObjectType, ObjectID string }

// JournalChanges are a page's entries as events, and the records its
// privacy deletions erase.
type JournalChanges struct {
	Events   []domain.Event
	Erasures []JournalErasure
}

// JournalEvents turns entries, oldest first, into events in their order:
//   - CREATE: the record's creation, then one propertyChange per property
//     it carries; UPDATE and SNAPSHOT: one propertyChange per property;
//     DELETE: the deletion. Each revised at occurredAt (milliseconds), the
//     webhooks' revision.
//   - MERGE and RESTORE, which the webhook parser does not read: recorded
//     without a revision (unversioned), never applied.
//   - GDPR_DELETE (or a GDPR_PRIVACY_DELETION entry): the record to erase;
//     the page's earlier events of that record are left out, as the
//     erasure would remove them.
//   - an entry of another object type or action: a rejected event.
func JournalEvents(entries []JournalEntry) JournalChanges {
	var out JournalChanges
	for _, e := range entries {
		typ, known := journalObjectTypes[e.ObjectTypeID]
		id := strconv.FormatInt(e.ObjectID, 10)
		ms := e.OccurredAt.UnixMilli()
		switch {
		case known && (e.Action == ActionGDPRDelete || e.SubscriptionType == subscriptionGDPR):
			out.Erasures = append(out.Erasures, JournalErasure{ObjectType: typ, ObjectID: id})
			kept := out.Events[:0]
			for _, ev := range out.Events {
				if ev.Scope.ObjectType != typ || ev.ObjectID != id {
					kept = append(kept, ev)
				}
			}
			out.Events = kept
		case known && e.Action == ActionCreate:
			out.Events = append(out.Events, pulledEvent(fromJournal, typ, "creation", id, domain.PropertyCreated, nil, ms))
			out.Events = append(out.Events, propertyEvents(typ, id, e.Properties, ms)...)
		case known && (e.Action == ActionUpdate || e.Action == ActionSnapshot):
			out.Events = append(out.Events, propertyEvents(typ, id, e.Properties, ms)...)
		case known && e.Action == ActionDelete:
			out.Events = append(out.Events, pulledEvent(fromJournal, typ, "deletion", id, domain.PropertyDeleted, nil, ms))
		case known && (e.Action == ActionMerge || e.Action == ActionRestore):
			out.Events = append(out.Events, unversioned(typ, id, e))
		default:
			out.Events = append(out.Events, unsupported(e))
		}
	}
	return out
}

// propertyEvents are one propertyChange per property, by name.
func propertyEvents(typ, id string, props map[string]*string, ms int64) []domain.Event {
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	events := make([]domain.Event, 0, len(names))
	for _, name := range names {
		// A cleared value is "", as the webhook parser reads a null.
		value := ""
		if v := props[name]; v != nil {
			value = *v
		}
		events = append(events, pulledEvent(fromJournal, typ, "propertyChange", id, name, &value, ms))
	}
	return events
}

// journalPayload is the payload of an event the journal cannot revise.
type journalPayload struct {
	Source          string  `json:"source"`
	Offset          string  `json:"offset"`
	ObjectTypeID    string  `json:"objectTypeId"`
	ObjectID        int64   `json:"objectId"`
	Action          string  `json:"action"`
	OccurredAt      int64   `json:"occurredAt"`
	PrimaryObjectID int64   `json:"primaryObjectId,omitempty"`
	MergedObjectIDs []int64 `json:"mergedObjectIds,omitempty"`
}

func payloadOf(e JournalEntry) []byte {
	p, _ := json.Marshal(journalPayload{Source: fromJournal.source, Offset: e.Offset, ObjectTypeID: e.ObjectTypeID,
		ObjectID: e.ObjectID, Action: e.Action, OccurredAt: e.OccurredAt.UnixMilli(),
		PrimaryObjectID: e.PrimaryObjectID, MergedObjectIDs: e.MergedObjectIDs})
	return p
}

// unversioned records a merge or restore without a revision.
func unversioned(typ, id string, e JournalEntry) domain.Event {
	action := strings.ToLower(e.Action)
	return domain.Event{
		EventID:   fmt.Sprintf("%s:%s:%s:%s:%d", fromJournal.idPrefix, typ, id, action, e.OccurredAt.UnixMilli()),
		Scope:     domain.ScopeName{ObjectType: typ, Action: action},
		ObjectID:  id,
		Timestamp: e.OccurredAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Payload:   payloadOf(e),
		Snapshot:  json.RawMessage(`{}`),
	}
}

// unsupported is an entry Tidemark does not read, rejected as the webhook
// parser rejects an unsupported subscription type.
func unsupported(e JournalEntry) domain.Event {
	return domain.Event{
		EventID:      fmt.Sprintf("%s:%s:%s", fromJournal.idPrefix, e.Offset, e.EventID),
		Scope:        domain.ScopeName{Action: "unsupported"},
		Payload:      payloadOf(e),
		RejectReason: fmt.Sprintf("unsupported HubSpot journal entry: object type %.20q, action %.40q; Tidemark reads contact, company and deal CREATE, UPDATE, SNAPSHOT, DELETE, MERGE, RESTORE and GDPR_DELETE", e.ObjectTypeID, e.Action),
	}
}
