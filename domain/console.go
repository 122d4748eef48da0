package domain

import (
	"context"
	"time"
)

// User is a console operator. An admin sees every tenant; a member sees
// the tenants of their memberships.
type User struct {
	ID      int64
	Email   string
	IsAdmin bool
}

// Login throttling: after this many failures within LoginWindow, sign-ins
// for that account (or from that address) are refused until the window
// passes.
const (
	LoginWindow             = 15 * time.Minute
	MaxLoginFailuresAccount = 5
	MaxLoginFailuresAddress = 20
)

// ConsoleService is what the console needs from storage. It is split by
// area; every tenant-scoped method takes the tenant id resolved from the
// operator's verified membership and returns ENOTFOUND outside it.
type ConsoleService interface {
	AccessService
	OverviewService
	EventLogService
	ConflictService
	ProviderAdminService
	AdminService
	PeopleService
}

// AccessService signs operators in and resolves what they may see.
type AccessService interface {
	// Authenticate checks email and password. Too many recent failures for
	// the account or the address give an EUNAUTHORIZED error saying when to
	// retry; a wrong password gives a generic EUNAUTHORIZED error.
	Authenticate(ctx context.Context, email, password, address string) (User, error)
	// User returns the operator with that id, or ENOTFOUND.
	User(ctx context.Context, id int64) (User, error)
	// VisibleTenants lists the tenants the operator may open, by slug.
	VisibleTenants(ctx context.Context, u User) ([]Tenant, error)
	// TenantFor returns the tenant when the operator is an admin or a
	// member, and ENOTFOUND otherwise, whether or not it exists.
	TenantFor(ctx context.Context, u User, slug string) (Tenant, error)
}
