package main

import (
	"bytes"
	"context"
	"encoding/json"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

// hubspotProperties are the contact properties the batches change, as in
// the provider's fixtures.
var hubspotProperties = []string{"company", "jobtitle", "lifecyclestage"}

// hubspotLoad makes HubSpot app-webhook deliveries: batches of
// contact.propertyChange events signed with X-HubSpot-Signature-v3.
type hubspotLoad struct {
	target, secret string
	contacts       int
	batch          int          // events per delivery
	sent           atomic.Int64 // numbers the events: HubSpot's eventId
}

// hubspotChange is one element of a batch, in HubSpot's shape.
type hubspotChange struct {
	EventID          int64  `json:"eventId"`
	SubscriptionID   int64  `json:"subscriptionId"`
	PortalID         int64  `json:"portalId"`
	AppID            int64  `json:"appId"`
	OccurredAt       int64  `json:"occurredAt"`
	SubscriptionType string `json:"subscriptionType"`
	AttemptNumber    int    `json:"attemptNumber"`
	ObjectID         int64  `json:"objectId"`
	PropertyName     string `json:"propertyName"`
	PropertyValue    string `json:"propertyValue"`
	ChangeSource     string `json:"changeSource"`
}

func (l *hubspotLoad) request(ctx context.Context) (*http.Request, error) {
	now := time.Now()
	first := l.sent.Add(int64(l.batch)) - int64(l.batch)
	events := make([]hubspotChange, l.batch)
	for i := range events {
		p := mathrand.IntN(len(hubspotProperties))
		events[i] = hubspotChange{
			EventID: first + int64(i) + 1, SubscriptionID: int64(p) + 1, PortalID: 1, AppID: 1,
			// occurredAt is the revision: in the past (never refused as
			// future), spread over a second so that a change of a property
			// is sometimes older than the one stored, as in the floor.
			OccurredAt:       now.UnixMilli() - mathrand.Int64N(1000),
			SubscriptionType: "contact.propertyChange",
			ObjectID:         mathrand.Int64N(int64(l.contacts)) + 1,
			PropertyName:     hubspotProperties[p],
			PropertyValue:    "Co-" + strconv.Itoa(mathrand.IntN(1_000_000)+1),
			ChangeSource:     "API",
		}
	}
	body, err := json.Marshal(events)
	if err != nil {
		return nil, err
	}
	return hubspotRequest(ctx, l.target, l.secret, body, now)
}

// hubspotRequest is a delivery of body signed v3 as HubSpot signs it at now:
// over the method, the URL called, the body and the timestamp.
func hubspotRequest(ctx context.Context, target, secret string, body []byte, now time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-HubSpot-Request-Timestamp", ts)
	req.Header.Set("X-HubSpot-Signature-v3", provider.SignHubSpotV3(secret, http.MethodPost, target, body, ts))
	return req, nil
}
