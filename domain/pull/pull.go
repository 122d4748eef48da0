// Package pull holds the nouns of backfill: a provider's API credentials,
// and the source that reads from the provider's API the records its
// webhooks should have carried, as events the ingest decides like any
// other (the same revision guard, idempotency and conflict queue).
package pull

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// DefaultBudgetShare is the share of the provider account's API budget a
// backfill may use when its credentials set none.
const DefaultBudgetShare = 0.5

// Credentials are a provider's API credentials, decrypted. Their secrets
// (Token, ClientSecret) are never logged, shown again, traced or stored in
// a delivery.
type Credentials struct {
	// Token is a HubSpot private app's access token.
	Token string
	// ClientID and ClientSecret are a Salesforce connected app's, for the
	// OAuth 2.0 client credentials flow at LoginURL
	// (https://MYDOMAIN.my.salesforce.com), on REST API version APIVersion
	// (such as v62.0).
	ClientID, ClientSecret string
	LoginURL               string
	APIVersion             string
	// BaseURL replaces HubSpot's API address (https://api.hubapi.com), for
	// tests and sandboxes; "" is the real one.
	BaseURL string
	// AllowPrivate lets BaseURL or LoginURL be a private or loopback
	// address: an operator's choice on the command line only.
	AllowPrivate bool
	// BudgetShare is the most of the account's API budget a backfill may
	// use, from 0 to 1; 0 is DefaultBudgetShare.
	BudgetShare float64
}

// Source reads a provider's records from its API.
type Source interface {
	// Pull calls emit with the events of the records of objectType (a
	// scope's object type, as the provider's webhooks name it) modified in
	// [from, to), a page at a time, oldest first, and returns when every
	// record was emitted, emit failed, ctx ended, or the provider refused
	// (bad credentials, budget spent: an error saying so).
	//
	// Each event's EventID is derived from the object, its revision (and
	// property), never from anything of the call, so a record pulled twice
	// yields the same event ids; its Payload is the record as the API
	// returned it, without credentials.
	Pull(ctx context.Context, objectType string, from, to time.Time, emit func([]domain.Event) error) error
}
