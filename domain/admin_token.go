package domain

import (
	"context"
	"time"
)

// An admin API token (docs/contract/api.md#admin-api) is owned by no
// tenant: it is good only for /api/v1/admin/..., and only while the admin
// operator who created it is an enabled admin still. It is not an
// operator's session: it reads what admins see of the service as a whole
// (the apps, their installs and unrouted portals).

// AdminTokenPrefix starts every admin token, so that it is recognised by
// eye and by secret scanners; a tenant's token starts "tmk_".
const AdminTokenPrefix = "tmka_"

// Audited outside any tenant, as app_create is.
const (
	AuditAdminTokenCreate = "admin_token_create"
	AuditAdminTokenRevoke = "admin_token_revoke"
)

// AdminToken is an admin API token as listed; the token itself is shown once.
type AdminToken struct {
	ID         int64
	Name       string
	Creator    string // the admin operator's email
	CreatedBy  string // who ran the command, as the audit log names them
	CreatedAt  time.Time
	ExpiresAt  time.Time // zero when it never expires
	LastUsedAt time.Time // zero when never used
	RevokedAt  time.Time // zero until revoked
	// Works: not revoked, not expired, and its creator an enabled admin,
	// by the database's clock and state when listed.
	Works bool
}

// NewAdminToken is what an admin token is made with.
type NewAdminToken struct {
	Name     string
	Lifetime time.Duration // 0: it never expires
	// CreatorEmail names the admin operator the token answers for: it
	// works while they are an enabled admin.
	CreatorEmail string
}

// AdminGrant is what a working admin token gives its bearer.
type AdminGrant struct {
	ID      int64
	Name    string // the actor the audit log records
	Creator string // the admin operator's email
}

// AdminTokenService manages admin API tokens and resolves them. Creating
// and revoking are audited outside any tenant with the actor of ctx.
type AdminTokenService interface {
	// CreateAdminToken creates a token and returns it; only its hash is
	// kept. An empty or overlong name or a lifetime out of bounds is
	// EINVALID; a creator who is unknown, disabled or not an admin is
	// EFORBIDDEN.
	CreateAdminToken(ctx context.Context, t NewAdminToken) (string, error)
	// AdminTokens lists every admin token, newest first, revoked ones
	// and those that no longer work included.
	AdminTokens(ctx context.Context) ([]AdminToken, error)
	// RevokeAdminToken revokes a token at once; revoking a revoked one is
	// a no-op, an unknown one ENOTFOUND.
	RevokeAdminToken(ctx context.Context, tokenID int64) error
	// AdminForToken returns what an admin token grants, recording its use
	// at most once a minute. A working token of a tenant is EFORBIDDEN
	// (the admin API is not a tenant's); an unknown, expired or revoked
	// token, or one whose creator is no longer an enabled admin, is
	// EUNAUTHORIZED.
	AdminForToken(ctx context.Context, token string) (AdminGrant, error)
}
