package domain

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TokenAccess is what an API token may do.
type TokenAccess string

const (
	TokenRead  TokenAccess = "read"  // reads records, events, stats and conflicts
	TokenWrite TokenAccess = "write" // also resolves conflicts and replays deliveries
)

// ParseTokenAccess reads an access by name; anything else is EINVALID.
func ParseTokenAccess(s string) (TokenAccess, error) {
	switch a := TokenAccess(s); a {
	case TokenRead, TokenWrite:
		return a, nil
	}
	return "", Errorf(EINVALID, "access must be read or write, got %q", s)
}

// Label is the access as people read it.
func (a TokenAccess) Label() string {
	if a == TokenRead {
		return "read-only"
	}
	return "read-write"
}

// APIToken is an API token as listed; the token itself is shown once.
type APIToken struct {
	ID         int64
	Name       string
	Access     TokenAccess
	CreatedBy  string // the operator's email or the CLI's user; empty for tokens older than the record
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero when it never expires
	Expired    bool      // past ExpiresAt by the database's clock
	LastUsedAt time.Time // zero when never used
	RevokedAt  time.Time // zero while it works
}

// Revoked reports whether the token has been revoked.
func (t APIToken) Revoked() bool { return !t.RevokedAt.IsZero() }

// MaxTokenNameLength bounds an API token's name.
const MaxTokenNameLength = 100

// ValidateTokenName checks an API token's name.
func ValidateTokenName(name string) error {
	if strings.TrimSpace(name) == "" {
		return Errorf(EINVALID, "give the token a name, for example the script or service that will use it")
	}
	if utf8.RuneCountInString(name) > MaxTokenNameLength {
		return Errorf(EINVALID, "a token name must be at most %d characters", MaxTokenNameLength)
	}
	return nil
}

// Bounds of an API token's lifetime, when it has one.
const (
	MinTokenLifetime = time.Hour
	MaxTokenLifetime = 3650 * 24 * time.Hour
)

// ParseTokenLifetime reads a lifetime written as whole days or hours
// ("90d", "12h"); "" and "never" mean a token that does not expire (0).
// Anything else, or a lifetime outside 1h to 3650d, is EINVALID.
func ParseTokenLifetime(s string) (time.Duration, error) {
	if s == "" || s == "never" {
		return 0, nil
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour}[s[len(s)-1]]
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if unit == 0 || err != nil || n < 1 || n > int64(MaxTokenLifetime/unit) || time.Duration(n)*unit < MinTokenLifetime {
		return 0, Errorf(EINVALID, "expiry must be whole days or hours from 1h to 3650d, such as 90d or 12h, or never; got %q", s)
	}
	return time.Duration(n) * unit, nil
}

// NewAPIToken is what a new API token is made with.
type NewAPIToken struct {
	Name      string
	Access    TokenAccess
	Lifetime  time.Duration // 0: it never expires
	CreatedBy int64         // the operator creating it; 0 from the CLI
}

// TokenGrant is what an API token gives its bearer.
type TokenGrant struct {
	Tenant Tenant
	ID     int64  // the token's id, the actor a replay job re-checks
	Name   string // the token's name, the actor the audit log records
	Access TokenAccess
}

// TokenService manages a tenant's API tokens and resolves them. Creating and
// revoking are recorded in the audit log with the actor of ctx.
type TokenService interface {
	// APITokens lists the tenant's API tokens, newest first, revoked and
	// expired ones included.
	APITokens(ctx context.Context, tenantID int64) ([]APIToken, error)
	// CreateAPIToken creates a token and returns it; only its hash is kept.
	// An empty or overlong name, an unknown access or a lifetime out of
	// bounds is EINVALID. An operator who is no longer an owner of the
	// tenant (nor an admin) when it is stored gets EFORBIDDEN.
	CreateAPIToken(ctx context.Context, tenantID int64, t NewAPIToken) (string, error)
	// RevokeAPIToken revokes a token at once; revoking a revoked token is a
	// no-op, an unknown one ENOTFOUND.
	RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error
	// TenantForToken returns what an API token grants in the tenant slug,
	// recording its use (LastUsedAt) at most once a minute.
	// A token that works only for another tenant, or a working admin
	// token (AdminTokenService), is ENOTFOUND, as that tenant's resources
	// are to it; an unknown, expired or revoked token is EUNAUTHORIZED.
	TenantForToken(ctx context.Context, slug, token string) (TokenGrant, error)
	// GrantForToken is TenantForToken for a caller whose URL names no
	// tenant (the MCP server): the token alone decides it. An unknown,
	// expired or revoked token is EUNAUTHORIZED, a working admin token
	// EFORBIDDEN.
	GrantForToken(ctx context.Context, token string) (TokenGrant, error)
}
