package domain

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// ProviderAdminService serves provider connections, secrets, scopes,
// deliveries and API tokens. Every method takes the tenant id resolved from
// the operator's membership and answers ENOTFOUND for a provider or token
// outside that tenant.
type ProviderAdminService interface {
	// ProviderSummaries lists the tenant's providers by name.
	ProviderSummaries(ctx context.Context, tenantID int64) ([]ProviderSummary, error)
	// ProviderSummary returns the provider of that name, or ENOTFOUND.
	ProviderSummary(ctx context.Context, tenantID int64, name string) (ProviderSummary, error)
	// ConnectProvider creates a provider with its kind-specific settings
	// and, unless secret is empty (a kind that signs nothing), its first
	// secret. A bad name or a kind that cannot be connected yet is EINVALID,
	// a name already taken in the tenant ECONFLICT.
	ConnectProvider(ctx context.Context, tenantID int64, name, kind, secret string, config map[string]string) (Provider, error)
	// ProviderSecrets lists the provider's active secrets, newest first,
	// without their values.
	ProviderSecrets(ctx context.Context, tenantID, providerID int64) ([]ProviderSecretInfo, error)
	// NewestProviderSecret returns the plaintext of the provider's newest
	// active secret, for signing a test event; ENOTFOUND when there is none.
	NewestProviderSecret(ctx context.Context, tenantID, providerID int64) (string, error)
	// RotateProviderSecret adds a new active secret; the newest previous one
	// stays active and any older one is retired. ENOTFOUND for an unknown
	// provider.
	RotateProviderSecret(ctx context.Context, tenantID, providerID int64, secret string) error
	// RetireProviderSecrets retires every active secret but the newest and
	// returns how many it retired.
	RetireProviderSecrets(ctx context.Context, tenantID, providerID int64) (int64, error)
	// ProviderDeliveries returns the provider's latest deliveries, newest
	// first, rejected ones included.
	ProviderDeliveries(ctx context.Context, tenantID, providerID int64, limit int) ([]ProviderDelivery, error)
	// EventOutcome returns the outcome of the newest event of the provider
	// with that event id received since since, or ENOTFOUND; a console test
	// event reads its outcome here when the kind's answer does not carry it.
	EventOutcome(ctx context.Context, tenantID, providerID int64, eventID string, since time.Time) (Outcome, error)
	// ProviderScopes lists the provider's scopes by object type and action.
	ProviderScopes(ctx context.Context, tenantID, providerID int64) ([]Scope, error)
	// SaveProviderScope creates or changes a scope. A TTL out of bounds or
	// an empty object type or action is EINVALID.
	SaveProviderScope(ctx context.Context, tenantID, providerID int64, sc Scope) error
	// APITokens lists the tenant's API tokens, newest first, revoked ones
	// included.
	APITokens(ctx context.Context, tenantID int64) ([]APIToken, error)
	// CreateAPIToken creates a token and returns it; only its hash is kept.
	// An empty or overlong name is EINVALID.
	CreateAPIToken(ctx context.Context, tenantID int64, name string) (string, error)
	// RevokeAPIToken revokes a token at once; revoking a revoked token is a
	// no-op, an unknown one ENOTFOUND.
	RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error
}

// ProviderSummary is a provider with what its list row and page show.
type ProviderSummary struct {
	Provider
	ActiveSecrets  int
	Deliveries24h  int64
	LastDeliveryAt time.Time // zero when none is retained
}

// ProviderSecretInfo describes an active signing secret without its value,
// which is shown once, when it is created.
type ProviderSecretInfo struct {
	ID        int64
	CreatedAt time.Time
}

// ProviderDelivery is one logged delivery of a provider.
type ProviderDelivery struct {
	ID         string
	ReceivedAt time.Time
	Status     int
	Signature  string // one of the Signature* verdicts
	Reason     string // why it was refused; empty when accepted
	EventCount int
}

// APIToken is an API token as listed; the token itself is shown once.
type APIToken struct {
	ID         int64
	Name       string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero when never used
	RevokedAt  time.Time // zero while it works
}

// Revoked reports whether the token has been revoked.
func (t APIToken) Revoked() bool { return !t.RevokedAt.IsZero() }

// ConnectableKinds are the provider kinds the console can connect now; the
// others need receivers that come in a later version.
var ConnectableKinds = []string{KindStandard, KindShippo, KindSalesforce, KindHubSpot}

// ValidateConnectableKind checks that providers of kind can be connected.
func ValidateConnectableKind(kind string) error {
	for _, k := range ConnectableKinds {
		if k == kind {
			return nil
		}
	}
	for _, k := range Kinds {
		if k == kind {
			return Errorf(EINVALID, "%s providers are coming in a later version of Tidemark; providers of kind %s can be connected for now", kind, strings.Join(ConnectableKinds, ", "))
		}
	}
	return Errorf(EINVALID, "provider kind %q is not one of %s", kind, strings.Join(Kinds, ", "))
}

// MaxTokenNameLength bounds an API token's name.
const MaxTokenNameLength = 100

// ValidateTokenName checks an API token's name.
func ValidateTokenName(name string) error {
	if strings.TrimSpace(name) == "" {
		return Errorf(EINVALID, "give the token a name, for example the script or service that will use it")
	}
	if utf8.RuneCountInString(name) > MaxTokenNameLength {
		return Errorf(EINVALID, "a token name must be at most %d characters", MaxTokenNameLength)
	}
	return nil
}

// ValidateScopeName checks an operator-entered scope: the object type may
// not contain a dot, since a delivery's type is split at its first dot.
func ValidateScopeName(n ScopeName) error {
	switch {
	case n.ObjectType == "" || n.Action == "":
		return Errorf(EINVALID, "a scope needs an object type and an action, for example contact and snapshot")
	case strings.Contains(n.ObjectType, "."):
		return Errorf(EINVALID, "object type %q may not contain a dot", n.ObjectType)
	case len(n.ObjectType)+len(n.Action) > 199:
		return Errorf(EINVALID, "object type and action together must be shorter than 200 characters")
	}
	return nil
}
