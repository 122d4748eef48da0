package domain

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// APIToken is an API token as listed; the token itself is shown once.
type APIToken struct {
	ID         int64
	Name       string
	CreatedAt  time.Time
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

// TokenService manages a tenant's API tokens and resolves them.
type TokenService interface {
	// APITokens lists the tenant's API tokens, newest first, revoked ones
	// included.
	APITokens(ctx context.Context, tenantID int64) ([]APIToken, error)
	// CreateAPIToken creates a token and returns it; only its hash is kept.
	// An empty or overlong name is EINVALID.
	CreateAPIToken(ctx context.Context, tenantID int64, name string) (string, error)
	// RevokeAPIToken revokes a token at once; revoking a revoked token is a
	// no-op, an unknown one ENOTFOUND.
	RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error
	// TenantForToken returns the tenant an API token belongs to, or an
	// EUNAUTHORIZED error for an unknown or revoked token.
	TenantForToken(ctx context.Context, token string) (Tenant, error)
}
