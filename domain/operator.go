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
	// Disabled operators cannot sign in, and their sessions end.
	Disabled bool
	// SessionEpoch is stored in a session at sign-in; a session holding an
	// older one has ended (disable, password reset, sign out everywhere).
	SessionEpoch int64
}

// Operator is a console user as the admin pages show them.
type Operator struct {
	ID        int64
	Email     string
	IsAdmin   bool
	Tenants   []string        // slugs of the tenants they are a member of, sorted
	Roles     map[string]Role // their role in each of Tenants
	CreatedAt time.Time
	// DisabledAt is when the operator was disabled; zero while enabled.
	DisabledAt time.Time
}

// Member is an operator as a tenant's members page shows them.
type Member struct {
	UserID  int64
	Email   string
	IsAdmin bool // acts as an owner whatever Role says
	Role    Role
	Since   time.Time
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

// NewMembership names an operator, by id or else by email, to make a
// member of the tenant TenantSlug with Role.
type NewMembership struct {
	UserID     int64
	Email      string
	TenantSlug string
	Role       Role
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
// change operators, and admins or the tenant's owners the ones that change
// its memberships; the CLI runs with the database's authority. Membership
// changes are recorded in the audit log with the actor of ctx.
type OperatorService interface {
	// User returns the operator with that id, or ENOTFOUND.
	User(ctx context.Context, id int64) (User, error)
	// Operators lists every operator by email, with the slugs of their
	// memberships.
	Operators(ctx context.Context) ([]Operator, error)
	// CreateUser creates an operator. tenantSlug, when set, makes them a
	// member of that tenant with role. A malformed email or a password
	// shorter than 8 characters is an EINVALID error, a taken email
	// ECONFLICT, an unknown tenant ENOTFOUND.
	CreateUser(ctx context.Context, email, password string, admin bool, tenantSlug string, role Role) error
	// Members lists the tenant's members by email.
	Members(ctx context.Context, tenantID int64) ([]Member, error)
	// AddMembership makes the operator with id userID, or else with that
	// email, a member of the tenant with role. An unknown operator or tenant
	// is ENOTFOUND, an existing membership ECONFLICT.
	AddMembership(ctx context.Context, m NewMembership) error
	// SetMemberRole changes operator userID's role in the tenant. A member
	// who stops being an owner loses the API tokens they created there, in
	// the same transaction; it returns how many were revoked. No such
	// membership is ENOTFOUND.
	SetMemberRole(ctx context.Context, userID int64, tenantSlug string, role Role) (revoked int, err error)
	// RemoveMembership ends operator userID's membership of the tenant and
	// revokes the API tokens they created there, returning how many; no such
	// membership is ENOTFOUND.
	RemoveMembership(ctx context.Context, userID int64, tenantSlug string) (revoked int, err error)
	// SetAdmin sets operator userID's admin flag as actor, refused as
	// CheckAdminChange says; an unknown operator is ENOTFOUND.
	SetAdmin(ctx context.Context, actor User, userID int64, admin bool) error

	// The lifecycle of an operator. Each change is recorded in the audit
	// log with the actor of ctx. The last enabled admin can be neither
	// disabled nor stripped of the admin flag (ECONFLICT).

	// SetDisabled disables operator userID, ending their sessions at once
	// and revoking the API tokens they created in every tenant, or enables
	// them again (their tokens stay revoked), as actor; refused as CheckDisable says. An
	// unknown operator is ENOTFOUND.
	SetDisabled(ctx context.Context, actor User, userID int64, disabled bool) error
	// ResetPassword sets the password of the operator with that email,
	// ends their sessions and revokes the API tokens they created. A password ValidatePassword refuses is EINVALID,
	// an unknown email ENOTFOUND.
	ResetPassword(ctx context.Context, email, password string) error
	// SignOutEverywhere ends every console session of operator userID and
	// revokes the API tokens they created; an unknown operator is ENOTFOUND.
	SignOutEverywhere(ctx context.Context, userID int64) error
}

// ErrLastAdmin refuses a change that would leave no enabled admin.
var ErrLastAdmin = &Error{Code: ECONFLICT,
	Message: "At least one enabled admin must remain. Make another operator an admin first."}

// CheckDisable decides whether actor may disable (or enable) operator
// userID. Only admins manage operators (anyone else gets ENOTFOUND); an
// admin may not disable themselves, which would end their own session.
func CheckDisable(actor User, userID int64, disabled bool) error {
	if !actor.IsAdmin {
		return Errorf(ENOTFOUND, "not found")
	}
	if actor.ID == userID && disabled {
		return Errorf(ECONFLICT, "You cannot disable yourself. Ask another admin to do it.")
	}
	return nil
}

// MinPasswordLength is the shortest password an operator may be given;
// MaxPasswordBytes (what bcrypt reads) bounds it above.
const MinPasswordLength = 8

// ValidatePassword checks a new password's length.
func ValidatePassword(password string) error {
	if len([]rune(password)) < MinPasswordLength {
		return Errorf(EINVALID, "password must be at least %d characters", MinPasswordLength)
	}
	if len(password) > MaxPasswordBytes {
		return Errorf(EINVALID, "password must be at most %d bytes", MaxPasswordBytes)
	}
	return nil
}
