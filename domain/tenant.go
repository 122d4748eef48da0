package domain

import (
	"context"
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

// TenantService creates and finds tenants.
type TenantService interface {
	// CreateTenant creates a tenant named name (the slug when empty). A bad
	// slug is EINVALID, a taken one ECONFLICT.
	CreateTenant(ctx context.Context, slug, name string) (Tenant, error)
	// Tenant returns the tenant with that slug, or ENOTFOUND.
	Tenant(ctx context.Context, slug string) (Tenant, error)
}
