package domain

import (
	"context"
	"regexp"
	"time"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// reservedTenantSlugs are names no tenant may take: its webhook URLs,
// /webhooks/{tenant}/{provider}, would be another endpoint's
// (/webhooks/apps/{name}, the app endpoint).
var reservedTenantSlugs = map[string]bool{"apps": true}

// ValidateSlug checks a tenant or provider slug.
func ValidateSlug(what, s string) error {
	if !slugPattern.MatchString(s) {
		return Errorf(EINVALID, "%s %q must be 1-63 characters of a-z, 0-9 and '-', starting with a letter or digit", what, s)
	}
	if what == "tenant" && reservedTenantSlugs[s] {
		return Errorf(EINVALID, "tenant %q is a reserved name: /webhooks/%s/... is the app endpoint's URL; choose another", s, s)
	}
	return nil
}

// Tenant is one customer workspace.
type Tenant struct {
	ID        int64
	Slug      string
	Name      string
	CreatedAt time.Time
	// MaxDestinations is how many destinations it may have.
	MaxDestinations int
	// ArchivedAt is when an admin archived it; nil while it is active.
	ArchivedAt *time.Time
}

// Bounds of Tenant.MaxDestinations: a tenant may have DefaultMaxDestinations
// unless an admin changes it, so that one tenant's destinations cannot
// take every sender's slots.
const (
	DefaultMaxDestinations = 20
	MaxMaxDestinations     = 10000
)

// TenantUpdate is what tidemark tenant update changes; nil leaves a field.
type TenantUpdate struct {
	MaxDestinations *int
}

// Check refuses values out of bounds, and an update that changes nothing.
func (u TenantUpdate) Check() error {
	switch {
	case u.MaxDestinations == nil:
		return Errorf(EINVALID, "nothing to change: give --max-destinations N")
	case *u.MaxDestinations < 0 || *u.MaxDestinations > MaxMaxDestinations:
		return Errorf(EINVALID, "max destinations %d: give 0 to %d", *u.MaxDestinations, MaxMaxDestinations)
	}
	return nil
}

// AuditTenantUpdate records a change of a tenant's limits.
const AuditTenantUpdate = "tenant_update"

// TenantService creates and finds tenants.
type TenantService interface {
	// CreateTenant creates a tenant named name (the slug when empty). A bad
	// slug is EINVALID, a taken one ECONFLICT.
	CreateTenant(ctx context.Context, slug, name string) (Tenant, error)
	// Tenant returns the tenant with that slug, or ENOTFOUND.
	Tenant(ctx context.Context, slug string) (Tenant, error)
	// UpdateTenant changes a tenant's limits (an admin's), audited.
	UpdateTenant(ctx context.Context, slug string, u TenantUpdate) (Tenant, error)
	TenantLifecycle
}
