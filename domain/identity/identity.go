// Package identity is single sign-on's nouns and rules: the identity
// provider's setup, the rules from its groups to roles, and who an ID
// token names (docs/contract/console.md#single-sign-on).
package identity

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Single sign-on (docs/contract/console.md#single-sign-on): operators sign
// in with the company's OpenID Connect provider, and their memberships
// and admin flag follow their groups there, by the rules an admin maps.

// Who may still sign in with a password once SSO is set.
const (
	PasswordSignInAll    = "all"    // every operator with a password
	PasswordSignInAdmins = "admins" // only admins marked break-glass
	PasswordSignInOff    = "off"    // nobody
)

// SSO session lengths: the default, and the bounds an admin may set.
const (
	DefaultSSOSessionLength = 12 * time.Hour
	MinSSOSessionLength     = time.Minute
	MaxSSOSessionLength     = 24 * time.Hour
)

// DefaultGroupsClaim is the ID token claim that lists a person's groups.
const DefaultGroupsClaim = "groups"

// SSOConfig is the identity provider's setup, as callers see it: never
// its client secret (SSOService.SSOClientSecret).
type SSOConfig struct {
	Name           string // shown on the sign-in button: "Sign in with Name"
	Issuer         string
	ClientID       string
	GroupsClaim    string
	AllowedDomains []string // email domains that may sign in; empty: any
	PasswordSignIn string   // PasswordSignIn*
	SessionLength  time.Duration
	// AllowPrivate lets the issuer be http or a private address (a test
	// provider); only the command line sets it.
	AllowPrivate bool
	Enabled      bool
	UpdatedAt    time.Time
}

// NewSSOConfig is what an admin gives to set SSO up; empty fields take
// the defaults.
type NewSSOConfig struct {
	SSOConfig
	ClientSecret string
}

// Check validates and normalises a new setup.
func (n NewSSOConfig) Check() (NewSSOConfig, error) {
	n.Issuer = strings.TrimRight(strings.TrimSpace(n.Issuer), "/")
	u, err := url.Parse(n.Issuer)
	switch {
	case n.Issuer == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return n, domain.Errorf(domain.EINVALID, "issuer: %q is not an http(s) URL", n.Issuer)
	case u.Scheme == "http" && !n.AllowPrivate:
		return n, domain.Errorf(domain.EINVALID, "issuer: %s must be https (http only for a test provider, with --allow-private)", n.Issuer)
	case strings.TrimSpace(n.ClientID) == "":
		return n, domain.Errorf(domain.EINVALID, "client id is required")
	case n.ClientSecret == "":
		return n, domain.Errorf(domain.EINVALID, "client secret is required")
	}
	n.ClientID = strings.TrimSpace(n.ClientID)
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" {
		n.Name = u.Host
	}
	if len(n.Name) > 40 {
		return n, domain.Errorf(domain.EINVALID, "name: at most 40 characters, got %d", len(n.Name))
	}
	if n.GroupsClaim = strings.TrimSpace(n.GroupsClaim); n.GroupsClaim == "" {
		n.GroupsClaim = DefaultGroupsClaim
	}
	var domains []string
	for _, d := range n.AllowedDomains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
		if d == "" {
			continue
		}
		if strings.ContainsAny(d, "@/ ") || !strings.Contains(d, ".") {
			return n, domain.Errorf(domain.EINVALID, "allowed domains: %q is not a domain like example.com", d)
		}
		domains = append(domains, d)
	}
	slices.Sort(domains)
	n.AllowedDomains = slices.Compact(domains)
	if n.PasswordSignIn == "" {
		n.PasswordSignIn = PasswordSignInAll
	}
	if !slices.Contains([]string{PasswordSignInAll, PasswordSignInAdmins, PasswordSignInOff}, n.PasswordSignIn) {
		return n, domain.Errorf(domain.EINVALID, "password sign-in: %q is not all, admins or off", n.PasswordSignIn)
	}
	if n.SessionLength == 0 {
		n.SessionLength = DefaultSSOSessionLength
	}
	if n.SessionLength < MinSSOSessionLength || n.SessionLength > MaxSSOSessionLength {
		return n, domain.Errorf(domain.EINVALID, "session length: %s is not between %s and %s", n.SessionLength,
			MinSSOSessionLength, MaxSSOSessionLength)
	}
	n.Enabled = true
	return n, nil
}

// AllowsPassword reports whether c lets an operator sign in with a
// password: always while SSO is off.
func (c SSOConfig) AllowsPassword(u domain.User, breakGlass bool) bool {
	if !c.Enabled {
		return true
	}
	switch c.PasswordSignIn {
	case PasswordSignInAll:
		return true
	case PasswordSignInAdmins:
		return u.IsAdmin && breakGlass
	}
	return false
}

// SSORule maps a group at the identity provider to a role in a tenant, or
// to the admin flag.
type SSORule struct {
	ID         int64
	Group      string
	TenantSlug string      // "" for an admin rule
	Role       domain.Role // "" for an admin rule
	Admin      bool
}

func (r SSORule) String() string {
	if r.Admin {
		return fmt.Sprintf("group %q → admin", r.Group)
	}
	return fmt.Sprintf("group %q → %s of %s", r.Group, r.Role, r.TenantSlug)
}

// Check validates a rule to map.
func (r SSORule) Check() (SSORule, error) {
	r.Group = strings.TrimSpace(r.Group)
	switch {
	case r.Group == "":
		return r, domain.Errorf(domain.EINVALID, "group is required")
	case r.Admin && (r.TenantSlug != "" || r.Role != ""):
		return r, domain.Errorf(domain.EINVALID, "an admin rule takes no tenant or role")
	case !r.Admin && (r.TenantSlug == "" || r.Role == ""):
		return r, domain.Errorf(domain.EINVALID, "a rule needs a tenant and a role, or admin")
	}
	if !r.Admin {
		if _, err := domain.ParseRole(string(r.Role)); err != nil {
			return r, err
		}
	}
	return r, nil
}

// SSOIdentity is who the identity provider says signed in, from a
// verified ID token.
type SSOIdentity struct {
	Subject       string
	Email         string
	EmailVerified bool
	Groups        []string
}

// SSOGrant is what the rules give an identity: the admin flag and a role
// in each tenant (the highest when several rules name one tenant).
type SSOGrant struct {
	Admin bool
	Roles map[string]domain.Role // by tenant slug
}

// Grant applies rules to groups.
func Grant(rules []SSORule, groups []string) SSOGrant {
	g := SSOGrant{Roles: map[string]domain.Role{}}
	for _, r := range rules {
		if !slices.Contains(groups, r.Group) {
			continue
		}
		if r.Admin {
			g.Admin = true
			continue
		}
		if old, ok := g.Roles[r.TenantSlug]; !ok || r.Role.Allows(old) {
			g.Roles[r.TenantSlug] = r.Role
		}
	}
	return g
}

// Empty reports whether the grant gives nothing: the person may not sign in.
func (g SSOGrant) Empty() bool { return !g.Admin && len(g.Roles) == 0 }

// CheckSSOIdentity refuses an identity the console cannot trust to name
// an operator: no subject, or an email the provider has not verified, or
// one outside the allowed domains.
func CheckSSOIdentity(c SSOConfig, id SSOIdentity) error {
	email := domain.NormalizeEmail(id.Email)
	switch {
	case id.Subject == "":
		return domain.Errorf(domain.EUNAUTHORIZED, "The identity provider's answer names nobody (no subject).")
	case email == "" || !id.EmailVerified:
		return domain.Errorf(domain.EFORBIDDEN, "%s did not say that your email address is verified, so Tidemark cannot tell who you are. "+
			"Ask your administrator to verify it there.", c.Name)
	case len(c.AllowedDomains) > 0 && !slices.Contains(c.AllowedDomains, emailDomain(email)):
		return domain.Errorf(domain.EFORBIDDEN, "Email addresses at %s may not sign in to this console (allowed: %s).",
			emailDomain(email), strings.Join(c.AllowedDomains, ", "))
	}
	return nil
}

func emailDomain(email string) string {
	_, d, _ := strings.Cut(email, "@")
	return d
}

// ErrNoSSORule refuses an SSO sign-in whose groups no rule maps.
var ErrNoSSORule = &domain.Error{Code: domain.EFORBIDDEN,
	Message: "None of your groups gives access to this console. Ask an admin to map one of them (tidemark sso map)."}

// SSOService keeps the SSO setup and signs SSO operators in. Changes are
// audited with the actor of ctx.
type SSOService interface {
	// SSOConfig returns the setup, or ENOTFOUND when SSO was never set.
	SSOConfig(ctx context.Context) (SSOConfig, error)
	// SSOClientSecret opens the client secret.
	SSOClientSecret(ctx context.Context) (string, error)
	// SetSSO stores a checked setup and turns SSO on.
	SetSSO(ctx context.Context, c NewSSOConfig) error
	// DisableSSO turns SSO off (password sign-in works for everyone
	// again); its setup and rules are kept. ENOTFOUND when never set.
	DisableSSO(ctx context.Context) error
	// SSORules lists the rules by group.
	SSORules(ctx context.Context) ([]SSORule, error)
	// MapSSOGroup adds a rule; an unknown tenant is ENOTFOUND, an existing
	// rule for the group and tenant (or admin) ECONFLICT.
	MapSSOGroup(ctx context.Context, r SSORule) (SSORule, error)
	// UnmapSSOGroup removes the rule for the group and tenant (or admin);
	// ENOTFOUND when there is none.
	UnmapSSOGroup(ctx context.Context, r SSORule) error
	// SignInSSO signs in the operator the identity names: created on the
	// first sign-in, their admin flag and memberships then set from the
	// rules, each change audited; a membership that ends revokes the API
	// tokens they created there. An identity no rule maps gets
	// ErrNoSSORule, after its operator's access was removed.
	SignInSSO(ctx context.Context, id SSOIdentity) (domain.User, error)
	// SetBreakGlass marks an admin as one who may still sign in with a
	// password when password sign-in is kept for admins.
	SetBreakGlass(ctx context.Context, email string, on bool) error
}
