package domain

import (
	"context"
	"time"
)

// Login throttling: after this many failures within LoginWindow, sign-ins
// for that account (or from that address) are refused until the window
// passes.
const (
	LoginWindow             = 15 * time.Minute
	MaxLoginFailuresAccount = 5
	MaxLoginFailuresAddress = 20
)

// AccessService decides who may see what: operators signing in to the
// console, and the tenants they may open.
type AccessService interface {
	// Authenticate checks email and password. Too many recent failures for
	// the account or the address give an EUNAUTHORIZED error saying when to
	// retry; a wrong password gives a generic EUNAUTHORIZED error.
	Authenticate(ctx context.Context, email, password, address string) (User, error)
	// VisibleTenants lists the tenants the operator may open, by slug.
	VisibleTenants(ctx context.Context, u User) ([]Tenant, error)
	// TenantFor returns the tenant when the operator is an admin or a
	// member, and ENOTFOUND otherwise, whether or not it exists.
	TenantFor(ctx context.Context, u User, slug string) (Tenant, error)
}
