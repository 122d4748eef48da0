package domain

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Provider is one webhook source connected to a tenant.
type Provider struct {
	TenantID   int64
	TenantSlug string
	ID         int64
	Name       string
	Kind       string // a kind registered in internal/provider
	CreatedAt  time.Time
	// Config holds kind-specific settings, e.g. "org_id" for Salesforce or
	// "auth" for Shippo. Secrets are never kept here.
	Config map[string]string
	// MaxBody is the largest delivery body read, in bytes; 0 means the
	// kind's default.
	MaxBody int64
	// MaxFutureSkew is how far ahead of the database's clock a timestamp
	// revision may be before its event is rejected.
	MaxFutureSkew time.Duration
}

// ProviderEndpoint is what the receiver needs to authenticate and route a
// delivery: the provider, its active signing secrets (newest first) and its
// scopes keyed by object type and action.
type ProviderEndpoint struct {
	Provider
	Secrets []string
	Scopes  map[ScopeName]Scope
}

// Scope returns the provider's scope of that name, or the defaults when the
// scope has not been used yet.
func (p ProviderEndpoint) Scope(name ScopeName) Scope {
	if s, ok := p.Scopes[name]; ok {
		return s
	}
	return DefaultScope(name)
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

// ProviderService serves a tenant's provider connections, their secrets,
// scopes and deliveries. Every method takes the tenant id and answers
// ENOTFOUND for a provider outside that tenant. Every change is recorded
// in the audit log, in its transaction, with the actor of ctx (never a
// secret); without an actor nothing is changed.
type ProviderService interface {
	// ProviderSummaries lists the tenant's providers by name.
	ProviderSummaries(ctx context.Context, tenantID int64) ([]ProviderSummary, error)
	// ProviderSummary returns the provider of that name, or ENOTFOUND.
	ProviderSummary(ctx context.Context, tenantID int64, name string) (ProviderSummary, error)
	// ProviderNames lists the names of the tenant's providers, sorted.
	ProviderNames(ctx context.Context, tenantID int64) ([]string, error)
	// ConnectProvider creates a provider with its kind-specific settings
	// and, unless secret is empty (a kind that signs nothing), its first
	// secret. A bad name or a kind that cannot be connected yet is EINVALID,
	// a name already taken in the tenant ECONFLICT, and so is a secret the
	// store would seal under a key none of the active secrets use (unless
	// the store's context allows a new key).
	ConnectProvider(ctx context.Context, tenantID int64, name, kind, secret string, config map[string]string) (Provider, error)
	// ProviderSecrets lists the provider's active secrets, newest first,
	// without their values.
	ProviderSecrets(ctx context.Context, tenantID, providerID int64) ([]ProviderSecretInfo, error)
	// NewestProviderSecret returns the plaintext of the provider's newest
	// active secret, for signing a test event; ENOTFOUND when there is none.
	NewestProviderSecret(ctx context.Context, tenantID, providerID int64) (string, error)
	// RotateProviderSecret adds a new active secret; the newest previous one
	// stays active and any older one is retired, so at most two are ever
	// active (the newest previous one that decrypts, when one does not).
	// ENOTFOUND for an unknown provider; ECONFLICT for a key the active
	// secrets do not use, as for ConnectProvider.
	RotateProviderSecret(ctx context.Context, tenantID, providerID int64, secret string) error
	// SetProviderLimits changes the limits that l sets and returns the
	// provider with its limits. A limit out of bounds is EINVALID.
	SetProviderLimits(ctx context.Context, tenantID, providerID int64, l ProviderLimits) (Provider, error)
	// RetireProviderSecrets retires every active secret but the newest one
	// the store's keys decrypt (the newest when none does) and
	// returns how many it retired; ENOTFOUND for an unknown provider.
	RetireProviderSecrets(ctx context.Context, tenantID, providerID int64) (int64, error)
	// UnshownProviderSecret returns the provider's newest active secret and
	// its plaintext when no operator has seen it yet (one issued at start-up
	// to a provider connected before its kind needed a secret); ENOTFOUND
	// otherwise.
	UnshownProviderSecret(ctx context.Context, tenantID, providerID int64) (ProviderSecretInfo, string, error)
	// MarkProviderSecretShown records that an operator has seen the secret
	// and updated the provider; ENOTFOUND for a secret of another provider.
	MarkProviderSecretShown(ctx context.Context, tenantID, providerID, secretID int64) error
	// ProviderScopes lists the provider's scopes by object type and action.
	ProviderScopes(ctx context.Context, tenantID, providerID int64) ([]Scope, error)
	// SaveProviderScope creates or changes a scope. A TTL out of bounds or
	// an empty object type or action is EINVALID.
	SaveProviderScope(ctx context.Context, tenantID, providerID int64, sc Scope) error
	// ProviderDeliveries returns the provider's latest deliveries, newest
	// first, rejected ones included.
	ProviderDeliveries(ctx context.Context, tenantID, providerID int64, limit int) ([]ProviderDelivery, error)
}

// Bounds of a provider's limits.
const (
	// MaxBodyCeiling is the largest body limit a provider may be given: a
	// delivery is read whole into memory before it is authenticated.
	MaxBodyCeiling = 64 << 20
	// MaxFutureSkewCeiling is the widest future-skew window a provider may
	// be given; a wider one would let a clock error freeze records.
	MaxFutureSkewCeiling = 24 * time.Hour
)

// ProviderLimits changes a provider's limits; a nil field keeps its value.
// A MaxBody of 0 returns the provider to its kind's default.
type ProviderLimits struct {
	MaxBody       *int64
	MaxFutureSkew *time.Duration
}

// Validate returns an EINVALID error for a limit out of bounds.
func (l ProviderLimits) Validate() error {
	if l.MaxBody != nil && *l.MaxBody != 0 {
		if err := ValidateMaxBody(*l.MaxBody); err != nil {
			return err
		}
	}
	if l.MaxFutureSkew != nil {
		return ValidateMaxFutureSkew(*l.MaxFutureSkew)
	}
	return nil
}

// ValidateMaxBody returns an EINVALID error unless n bytes is a usable body
// limit: more than 0 and at most MaxBodyCeiling.
func ValidateMaxBody(n int64) error {
	if n <= 0 || n > MaxBodyCeiling {
		return Errorf(EINVALID, "the body limit must be more than 0 and at most %s; got %d bytes", FormatByteSize(MaxBodyCeiling), n)
	}
	return nil
}

// ValidateMaxFutureSkew returns an EINVALID error unless d is a usable
// future-skew window: whole seconds from 0 to MaxFutureSkewCeiling.
func ValidateMaxFutureSkew(d time.Duration) error {
	if d < 0 || d > MaxFutureSkewCeiling || d%time.Second != 0 {
		return Errorf(EINVALID, "the future-skew window must be whole seconds from 0s to %s; got %s", MaxFutureSkewCeiling, d)
	}
	return nil
}

// byteUnits are the units ParseByteSize accepts, largest first.
var byteUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseByteSize reads a size in bytes, such as "1048576", "512KiB" or
// "5 MiB" (units B, KiB, MiB and GiB, in any case). Anything else is
// EINVALID; the caller checks the range, as ValidateMaxBody does.
func ParseByteSize(s string) (int64, error) {
	v := strings.TrimSpace(s)
	unit := int64(1)
	for _, u := range byteUnits {
		if len(v) > len(u.name) && strings.EqualFold(v[len(v)-len(u.name):], u.name) {
			v, unit = strings.TrimSpace(v[:len(v)-len(u.name)]), u.size
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > (1<<62)/unit || n < -(1<<62)/unit {
		return 0, Errorf(EINVALID, "%q is not a size; give bytes (1048576) or a size such as 512KiB or 5MiB", s)
	}
	return n * unit, nil
}

// FormatByteSize writes n bytes in the largest unit that holds it whole,
// such as "5 MiB" or "1500 bytes".
func FormatByteSize(n int64) string {
	for _, u := range byteUnits[:3] {
		if n != 0 && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
