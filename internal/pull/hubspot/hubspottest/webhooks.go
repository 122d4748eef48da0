package hubspottest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

// V3Event is one event of a public app's webhook batch, as
// https://developers.hubspot.com/docs/api/webhooks (Webhooks API v3,
// payloads) describes it: every installed portal's events go to the app's
// one target URL, each carrying its portalId.
type V3Event struct {
	EventID          int64
	SubscriptionID   int64
	PortalID         int64
	AppID            int64 // the fake's app when 0
	OccurredAt       time.Time
	SubscriptionType string // contact.creation, contact.propertyChange, contact.deletion, ..., APP_LIFECYCLE_EVENT
	// Action is an app lifecycle event's APP_INSTALL or APP_UNINSTALL
	// (LifecycleEvent). [unverified] HubSpot documents APP_LIFECYCLE_EVENT
	// and these actions for the journal's subscriptions and entries, not
	// the v3 webhook's fields for them: the fake sends them as a journal
	// entry names them, beside the v3 event's identifiers.
	Action        string
	AttemptNumber int
	ObjectID      int64
	PropertyName  string // propertyChange events only
	PropertyValue string
	ChangeSource  string
	ChangeFlag    string
	SourceID      string
}

func (e V3Event) render() map[string]any {
	m := map[string]any{"eventId": e.EventID, "subscriptionId": e.SubscriptionID, "portalId": e.PortalID,
		"appId": e.AppID, "occurredAt": e.OccurredAt.UnixMilli(), "subscriptionType": e.SubscriptionType,
		"attemptNumber": e.AttemptNumber, "objectId": e.ObjectID}
	if e.Action != "" {
		m["action"] = e.Action
	}
	if e.PropertyName != "" {
		m["propertyName"], m["propertyValue"] = e.PropertyName, e.PropertyValue
	}
	for k, v := range map[string]string{"changeSource": e.ChangeSource, "changeFlag": e.ChangeFlag, "sourceId": e.SourceID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// SignedBatch is a webhook batch of events as HubSpot POSTs it to uri (the
// full URL it calls), signed v3 with clientSecret at at
// (https://developers.hubspot.com/docs/api/webhooks/validating-requests):
// the body and its Content-Type, X-HubSpot-Signature-v3 and
// X-HubSpot-Request-Timestamp headers.
func SignedBatch(clientSecret, uri string, at time.Time, events ...V3Event) ([]byte, http.Header) {
	list := make([]map[string]any, len(events))
	for i, e := range events {
		list[i] = e.render()
	}
	body, _ := json.Marshal(list)
	ts := strconv.FormatInt(at.UnixMilli(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-HubSpot-Request-Timestamp", ts)
	h.Set("X-HubSpot-Signature-v3", provider.SignHubSpotV3(clientSecret, http.MethodPost, uri, body, ts))
	return body, h
}

// AppBatch is SignedBatch for the fake's app: events without an AppID get
// its id, and the batch is signed with its client secret.
func (s *Server) AppBatch(uri string, at time.Time, events ...V3Event) ([]byte, http.Header) {
	for i := range events {
		if events[i].AppID == 0 {
			events[i].AppID = s.app.app.ID
		}
	}
	return SignedBatch(s.app.app.ClientSecret, uri, at, events...)
}

// LifecycleEvent is the app lifecycle event HubSpot sends to the app's
// target URL when the app is installed in or uninstalled from portal
// (action APP_INSTALL or APP_UNINSTALL).
func LifecycleEvent(eventID, portal int64, action string, at time.Time) V3Event {
	return V3Event{EventID: eventID, PortalID: portal, OccurredAt: at, SubscriptionType: "APP_LIFECYCLE_EVENT", Action: action}
}
