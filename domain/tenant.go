package domain

import (
	"regexp"
	"time"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidateSlug checks a tenant or provider slug.
func ValidateSlug(what, s string) error {
	if !slugPattern.MatchString(s) {
		return Errorf(EINVALID, "%s %q must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit", what, s)
	}
	return nil
}

// Tenant is one customer workspace.
type Tenant struct {
	ID        int64
	Slug      string
	Name      string
	CreatedAt time.Time
}

// Provider kinds.
const (
	KindStandard   = "standard"
	KindHubSpot    = "hubspot"
	KindSalesforce = "salesforce"
	KindShippo     = "shippo"
)

// Kinds lists the provider kinds a tenant can connect.
var Kinds = []string{KindStandard, KindHubSpot, KindSalesforce, KindShippo}

// Provider is one webhook source connected to a tenant.
type Provider struct {
	TenantID   int64
	TenantSlug string
	ID         int64
	Name       string
	Kind       string
	CreatedAt  time.Time
	// Config holds kind-specific settings, e.g. "org_id" for Salesforce or
	// "auth" for Shippo. Secrets are never kept here.
	Config map[string]string
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
