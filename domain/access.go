package domain

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// Sign-in throttling. Each password check takes two slots before it runs,
// the account's first: MaxLoginChecks per account and client address key
// within LoginWindow (a success frees the account's slots from that
// address), then MaxLoginChecksAddress per address key over all accounts
// (a success gives its slot back). An attempt refused for the account's
// slots takes none of the address's, so failures against one account
// cannot lock the address's other accounts out: the address's limit, far
// larger, only stops floods across many accounts. A stranger elsewhere
// cannot lock an operator out.
const (
	LoginWindow           = 15 * time.Minute
	MaxLoginChecks        = 5
	MaxLoginChecksAddress = 200
)

// The refusals of Authenticate that checked no password: too many
// recent checks for the account from the address, too many for the
// address over all accounts, and too many checks running or waiting on
// this node.
var (
	ErrSignInThrottledAccount = Errorf(EUNAUTHORIZED,
		"Too many failed sign-ins for this account from your network address. Wait %d minutes and try again.", int(LoginWindow.Minutes()))
	ErrSignInThrottledAddress = Errorf(EUNAUTHORIZED,
		"Too many failed sign-ins from your network address. Wait %d minutes and try again.", int(LoginWindow.Minutes()))
	ErrSignInBusy = Errorf(EUNAVAILABLE, "Too many sign-ins are being checked right now. Wait a few seconds and try again.")
)

// Sign-in input limits, checked before any hashing or query: the longest
// email address SMTP allows, and the most bytes bcrypt reads.
const (
	MaxEmailLength   = 254
	MaxPasswordBytes = 72
)

// Audit summaries of the sign_in action.
const (
	SignInSucceeded      = "succeeded"
	SignInWrongPassword  = "wrong password"
	SignInUnknownAccount = "unknown account"
	SignInThrottled      = "throttled"
	// Single sign-on's outcomes: signed in, or refused for no group rule.
	SignInSSOSucceeded = "succeeded by single sign-on"
	SignInSSONoRule    = "refused by single sign-on: no group rule"
)

// CheckSignIn refuses an empty or over-long email or password (EINVALID),
// so that such input costs neither a hash nor a query.
func CheckSignIn(email, password string) error {
	email = NormalizeEmail(email)
	if email == "" || password == "" {
		return Errorf(EINVALID, "Enter your email and password.")
	}
	if len(email) > MaxEmailLength || len(password) > MaxPasswordBytes {
		return Errorf(EINVALID, "Emails are at most %d characters and passwords at most %d bytes.", MaxEmailLength, MaxPasswordBytes)
	}
	return nil
}

// LoginAddressKey is the client address sign-ins are counted by: an IPv4
// address as it is, an IPv6 address as its /64, since one host or customer
// commonly holds a whole /64. Anything else is kept as it is, cut short.
func LoginAddressKey(address string) string {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return address[:min(len(address), 64)]
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// AccessService decides who may see what: operators signing in to the
// console, and the tenants they may open.
type AccessService interface {
	// Authenticate checks email and password from the client address. ctx
	// carries the actor (WithActor): every attempt past CheckSignIn, signed
	// in or refused, is recorded as a sign_in audit entry with the
	// attempt's throttling bookkeeping. Input CheckSignIn refuses is
	// EINVALID; too many recent checks give ErrSignInThrottledAccount or
	// ErrSignInThrottledAddress (EUNAUTHORIZED, saying when to retry), a
	// wrong email or password a generic EUNAUTHORIZED error, and a check
	// that found every place to check a password taken and their waiting
	// room full ErrSignInBusy (EUNAVAILABLE; its slots are given back,
	// and it is not audited).
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
