package domain

import (
	"context"
	"slices"
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
	// TenantFor returns the tenant with the operator's role in it (an
	// admin acts as an owner) when the operator is an admin or a member,
	// and ENOTFOUND otherwise, whether or not it exists.
	TenantFor(ctx context.Context, u User, slug string) (Membership, error)
}

// Membership is an operator's standing in one tenant.
type Membership struct {
	Tenant Tenant
	Role   Role
}

// Roles lists the roles from the least to the most allowed.
var Roles = []Role{RoleViewer, RoleOperator, RoleOwner}

// ParseRole reads a role by name; anything else is EINVALID.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", Errorf(EINVALID, "role must be viewer, operator or owner, got %q", s)
}

// Allows reports whether r may do what role need may; the zero role (no
// membership) allows nothing.
func (r Role) Allows(need Role) bool {
	return r != "" && slices.Index(Roles, r) >= slices.Index(Roles, need)
}

// Article is "a" or "an", as the role's name needs.
func (r Role) Article() string {
	if r == RoleOperator || r == RoleOwner {
		return "an"
	}
	return "a"
}

// CheckRole answers the EFORBIDDEN error that tells someone with role have
// which role an action needs, or nil when have allows it.
func CheckRole(have, need Role) error {
	if have.Allows(need) {
		return nil
	}
	you := "you have no role in it"
	if have != "" {
		you = "you are " + have.Article() + " " + string(have)
	}
	return Errorf(EFORBIDDEN, "This needs the %s role in this workspace, and %s. "+
		"Ask an owner of the workspace or an admin to change your role.", need, you)
}
