package hubspot

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Journal subscriptions, as the spec
// PublicApiSpecs/Webhooks Journal/Webhooks Journal/Rollouts/284944/2026-03/webhooksJournal.json
// describes them: GET and POST /webhooks-journal/subscriptions/2026-03
// (CollectionResponseSubscriptionResponseNoPaging {results}; a
// SubscriptionUpsertRequest → SubscriptionResponse), DELETE …/{subscriptionId}
// and …/portals/{portalId} (204). Page:
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/subscriptions/create-subscription
const subscriptionsPath = "/webhooks-journal/subscriptions/2026-03"

// SubscriptionRequest creates a subscription (the spec's
// ObjectSubscriptionUpsertRequest and its siblings, by SubscriptionType).
type SubscriptionRequest struct {
	SubscriptionType        string   `json:"subscriptionType"` // OBJECT, ASSOCIATION, GDPR_PRIVACY_DELETION, ...
	PortalID                int64    `json:"portalId,omitempty"`
	ObjectTypeID            string   `json:"objectTypeId,omitempty"`
	Actions                 []string `json:"actions,omitempty"`
	Properties              []string `json:"properties,omitempty"`
	ObjectIDs               []int64  `json:"objectIds,omitempty"`
	AssociatedObjectTypeIDs []string `json:"associatedObjectTypeIds,omitempty"`
	ListIDs                 []int64  `json:"listIds,omitempty"`
	EventTypeID             string   `json:"eventTypeId,omitempty"` // APP_LIFECYCLE_EVENT
}

// Subscription is the spec's SubscriptionResponse.
type Subscription struct {
	ID                      int64      `json:"id"`
	AppID                   int64      `json:"appId"`
	PortalID                int64      `json:"portalId"`
	SubscriptionType        string     `json:"subscriptionType"`
	ObjectTypeID            string     `json:"objectTypeId"`
	Actions                 []string   `json:"actions"`
	Properties              []string   `json:"properties"`
	ObjectIDs               []int64    `json:"objectIds"`
	AssociatedObjectTypeIDs []string   `json:"associatedObjectTypeIds"`
	ListIDs                 []int64    `json:"listIds"`
	CreatedAt               time.Time  `json:"createdAt"`
	UpdatedAt               time.Time  `json:"updatedAt"`
	DeletedAt               *time.Time `json:"deletedAt"`
	CreatedBy               int64      `json:"createdBy"`
}

// Subscriptions lists the app's journal subscriptions.
func (c *Client) Subscriptions(ctx context.Context, tokens *TokenSource) ([]Subscription, error) {
	var a struct {
		Results []Subscription `json:"results"`
	}
	err := c.authed(ctx, tokens, request{method: http.MethodGet, url: c.base + subscriptionsPath, what: "list the journal subscriptions"}, &a)
	return a.Results, err
}

// CreateSubscription adds a journal subscription.
func (c *Client) CreateSubscription(ctx context.Context, tokens *TokenSource, s SubscriptionRequest) (Subscription, error) {
	var out Subscription
	err := c.authed(ctx, tokens, request{method: http.MethodPost, url: c.base + subscriptionsPath, what: "create a journal subscription", body: s}, &out)
	return out, err
}

// DeleteSubscription removes a journal subscription.
func (c *Client) DeleteSubscription(ctx context.Context, tokens *TokenSource, id int64) error {
	return c.authed(ctx, tokens, request{method: http.MethodDelete, url: c.base + subscriptionsPath + "/" + strconv.FormatInt(id, 10),
		what: "delete a journal subscription"}, nil)
}

// DeletePortalSubscriptions removes every journal subscription of a portal
// (an uninstall).
func (c *Client) DeletePortalSubscriptions(ctx context.Context, tokens *TokenSource, portal int64) error {
	return c.authed(ctx, tokens, request{method: http.MethodDelete, url: c.base + subscriptionsPath + "/portals/" + strconv.FormatInt(portal, 10),
		what: "delete a portal's journal subscriptions"}, nil)
}
