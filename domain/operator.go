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

// Operator is a console user as the admin pages show them.
type Operator struct {
	ID        int64
	Email     string
	IsAdmin   bool
	Tenants   []string // slugs of the tenants they are a member of, sorted
	CreatedAt time.Time
}

// MemberOf reports whether the operator is a member of the tenant slug.
func (o Operator) MemberOf(slug string) bool {
	for _, t := range o.Tenants {
		if t == slug {
			return true
		}
	}
	return false
}

// CheckAdminChange decides whether actor may set userID's admin flag to
// admin. Only admins manage operators (anyone else gets ENOTFOUND, as for a
// page that does not exist). An admin may not drop their own flag: it would
// lock them out of these pages, and the last admin would leave none.
func CheckAdminChange(actor User, userID int64, admin bool) error {
	if !actor.IsAdmin {
		return Errorf(ENOTFOUND, "not found")
	}
	if actor.ID == userID && !admin {
		return Errorf(ECONFLICT, "You cannot remove your own admin role. Ask another admin to do it.")
	}
	return nil
}

// OperatorService manages console operators and their memberships. Its
// methods span tenants: the console lets only admins reach the ones that
// change anything, and the CLI runs with the database's authority.
type OperatorService interface {
	// User returns the operator with that id, or ENOTFOUND.
	User(ctx context.Context, id int64) (User, error)
	// Operators lists every operator by email, with the slugs of their
	// memberships.
	Operators(ctx context.Context) ([]Operator, error)
	// CreateUser creates an operator. tenantSlug, when set, makes them a
	// member of that tenant. A malformed email or a password shorter than
	// 8 characters is an EINVALID error, a taken email ECONFLICT, an
	// unknown tenant ENOTFOUND.
	CreateUser(ctx context.Context, email, password string, admin bool, tenantSlug string) error
	// AddMembership makes operator userID a member of the tenant; being one
	// already is not an error. An unknown operator or tenant is ENOTFOUND.
	AddMembership(ctx context.Context, userID int64, tenantSlug string) error
	// RemoveMembership ends operator userID's membership of the tenant, or
	// returns ENOTFOUND when there is no such membership.
	RemoveMembership(ctx context.Context, userID int64, tenantSlug string) error
	// SetAdmin sets operator userID's admin flag as actor, refused as
	// CheckAdminChange says; an unknown operator is ENOTFOUND.
	SetAdmin(ctx context.Context, actor User, userID int64, admin bool) error
}
