package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

const apiTokensSQL = `
SELECT id, name, access, created_by, created_at, expires_at, coalesce(expires_at <= now(), false), last_used_at, revoked_at
FROM api_tokens
WHERE tenant_id = @tenant_id ORDER BY created_at DESC, id DESC`

// tokenCreatorSQL answers whether an operator may still create a token:
// enabled, and an admin or an owner of the tenant. The operator's row and
// membership are locked until the token is stored, so a change of role,
// a disable or a password reset that revokes the operator's tokens either
// waits for it or is seen by it (memberForUpdateSQL, lockUserSQL).
const tokenCreatorSQL = `
WITH u AS (SELECT is_admin, disabled_at IS NOT NULL AS disabled FROM users WHERE id = @user_id FOR SHARE)
SELECT coalesce((SELECT is_admin FROM u), false), coalesce((SELECT disabled FROM u), true),
       coalesce((SELECT role FROM memberships WHERE tenant_id = @tenant_id AND user_id = @user_id FOR SHARE), '')`

const createAPITokenSQL = `
INSERT INTO api_tokens (tenant_id, name, token_hash, access, expires_at, created_by, created_by_user_id)
VALUES (@tenant_id, @name, @token_hash, @access,
        now() + nullif(@lifetime_s::bigint, 0) * interval '1 second', -- no lifetime, no end (Citus takes no CASE here)
        @created_by, nullif(@user_id::bigint, 0))
RETURNING expires_at`

// revokeAPITokenSQL revokes an active token and answers whether the token
// exists at all, so revoking twice is not an error, and its name when
// this revoked it.
const revokeAPITokenSQL = `
WITH revoked AS (
    UPDATE api_tokens SET revoked_at = now()
    WHERE tenant_id = @tenant_id AND id = @id AND revoked_at IS NULL
    RETURNING name
)
SELECT EXISTS (SELECT FROM api_tokens WHERE tenant_id = @tenant_id AND id = @id), (SELECT name FROM revoked)`

// APITokens implements domain.TokenService.
func (s *Tokens) APITokens(ctx context.Context, tenantID int64) ([]domain.APIToken, error) {
	rows, err := s.read.Query(ctx, apiTokensSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.APIToken, error) {
		var (
			t                      domain.APIToken
			expires, used, revoked *time.Time
		)
		err := row.Scan(&t.ID, &t.Name, &t.Access, &t.CreatedBy, &t.CreatedAt, &expires, &t.Expired, &used, &revoked)
		t.ExpiresAt, t.LastUsedAt, t.RevokedAt = orZero(expires), orZero(used), orZero(revoked)
		return t, err
	})
	return out, pg.Translate(err)
}

// orZero is a nullable time, zero for NULL.
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// CreateAPIToken implements domain.TokenService.
func (s *Tokens) CreateAPIToken(ctx context.Context, tenantID int64, nt domain.NewAPIToken) (string, error) {
	name := strings.TrimSpace(nt.Name)
	if err := domain.ValidateTokenName(name); err != nil {
		return "", err
	}
	if _, err := domain.ParseTokenAccess(string(nt.Access)); err != nil {
		return "", err
	}
	if nt.Lifetime != 0 && (nt.Lifetime < domain.MinTokenLifetime || nt.Lifetime > domain.MaxTokenLifetime) {
		return "", domain.Errorf(domain.EINVALID, "a token's lifetime must be from %s to %d days", domain.MinTokenLifetime,
			domain.MaxTokenLifetime/(24*time.Hour))
	}
	actor, _ := domain.ActorFrom(ctx) // audit refuses a change without one
	raw := make([]byte, 32)
	rand.Read(raw)
	token := "tmk_" + base64.RawURLEncoding.EncodeToString(raw)
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if nt.CreatedBy != 0 {
			if err := checkTokenCreator(ctx, tx, tenantID, nt.CreatedBy); err != nil {
				return err
			}
		}
		var expires *time.Time
		err := tx.QueryRow(ctx, createAPITokenSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": name,
			"token_hash": tokenHash(token), "access": string(nt.Access), "lifetime_s": int64(nt.Lifetime / time.Second),
			"created_by": creatorLabel(actor), "user_id": nt.CreatedBy}).Scan(&expires)
		if err != nil {
			return pg.Translate(err)
		}
		summary := nt.Access.Label()
		if expires != nil {
			summary += ", expires " + expires.UTC().Format("2006-01-02 15:04 UTC")
		}
		return pg.Translate(pg.Audit(ctx, tx, tenantID, domain.AuditTokenCreate, name, summary))
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// checkTokenCreator refuses, with EFORBIDDEN, an operator who is disabled,
// or neither an admin nor an owner of the tenant any more, and holds their
// row and membership until tx ends.
func checkTokenCreator(ctx context.Context, tx pgx.Tx, tenantID, userID int64) error {
	var (
		admin, disabled bool
		role            domain.Role
	)
	err := tx.QueryRow(ctx, tokenCreatorSQL, pgx.NamedArgs{"tenant_id": tenantID, "user_id": userID}).Scan(&admin, &disabled, &role)
	switch {
	case err != nil:
		return pg.Translate(err)
	case disabled:
		return domain.Errorf(domain.EFORBIDDEN, "a disabled operator cannot create API tokens")
	case admin:
		return nil
	}
	return domain.CheckRole(role, domain.RoleOwner)
}

// creatorLabel is who made a token as its list shows them.
func creatorLabel(a domain.Actor) string {
	if a.Kind == domain.ActorCLI {
		return "tidemark CLI (" + a.Name + ")"
	}
	return a.Name
}

// RevokeAPIToken implements domain.TokenService.
func (s *Tokens) RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			found bool
			name  *string
		)
		err := tx.QueryRow(ctx, revokeAPITokenSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": tokenID}).Scan(&found, &name)
		switch {
		case err != nil:
			return pg.Translate(err)
		case !found:
			return pg.NotFound("API token %d not found", tokenID)
		case name == nil: // revoked already
			return nil
		}
		return pg.Translate(pg.Audit(ctx, tx, tenantID, domain.AuditTokenRevoke, *name, ""))
	})
}

// tokenTenantSQL reads the tenant the request names; tokenSQL then
// resolves a working API token of it, on that tenant's rows alone (on
// Citus, its worker). It records the use at most once a minute, so that
// API reads do not each write the token's row.
const (
	tokenTenantSQL = `SELECT id, slug, name, created_at FROM tenants WHERE slug = @slug AND archived_at IS NULL`
	tokenSQL       = `
WITH k AS (
    SELECT id, name, access, last_used_at FROM api_tokens
    WHERE tenant_id = @tenant_id AND token_hash = @token_hash
      AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
), touched AS (
    UPDATE api_tokens a SET last_used_at = now() FROM k
    WHERE a.tenant_id = @tenant_id AND a.id = k.id
      AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute')
)
SELECT id, name, access FROM k`
)

// tokenElsewhereSQL tells, after tokenSQL missed, whether the token works
// for some other tenant: the one lookup across tenants, on the error path.
const tokenElsewhereSQL = `
SELECT EXISTS (SELECT 1 FROM api_tokens WHERE token_hash = @token_hash
               AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))`

// TenantForToken implements domain.TokenService.
func (s *Tokens) TenantForToken(ctx context.Context, slug, token string) (domain.TokenGrant, error) {
	var g domain.TokenGrant
	args := pgx.NamedArgs{"slug": slug, "token_hash": tokenHash(token)}
	err := s.read.QueryRow(ctx, tokenTenantSQL, args).Scan(&g.Tenant.ID, &g.Tenant.Slug, &g.Tenant.Name, &g.Tenant.CreatedAt)
	if err == nil {
		args["tenant_id"] = g.Tenant.ID
		err = s.read.QueryRow(ctx, tokenSQL, args).Scan(&g.ID, &g.Name, &g.Access)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return g, pg.Translate(err)
	}
	var elsewhere bool
	if err := s.read.QueryRow(ctx, tokenElsewhereSQL, args).Scan(&elsewhere); err != nil {
		return domain.TokenGrant{}, pg.Translate(err)
	}
	if !elsewhere && strings.HasPrefix(token, domain.AdminTokenPrefix) {
		// An admin token is no tenant's: tenant routes do not exist for it.
		if err := s.read.QueryRow(ctx, workingAdminTokenSQL, args).Scan(&elsewhere); err != nil {
			return domain.TokenGrant{}, pg.Translate(err)
		}
	}
	if elsewhere {
		return domain.TokenGrant{}, domain.Errorf(domain.ENOTFOUND, "not found")
	}
	return domain.TokenGrant{}, domain.Errorf(domain.EUNAUTHORIZED, "invalid, expired or revoked API token")
}

// tokenSlugSQL finds the tenant of a working API token by its hash alone,
// across tenants (the plain index of migration 00022), for callers whose
// URL names no tenant. Tokens are random: a hash is in one tenant at most.
const tokenSlugSQL = `
SELECT t.slug FROM api_tokens a JOIN tenants t ON t.id = a.tenant_id AND t.archived_at IS NULL
WHERE a.token_hash = @token_hash AND a.revoked_at IS NULL AND (a.expires_at IS NULL OR a.expires_at > now())
LIMIT 1`

// GrantForToken implements domain.TokenService: it finds the token's
// tenant, then resolves the token there as TenantForToken does, so that
// both grant and record a use alike.
func (s *Tokens) GrantForToken(ctx context.Context, token string) (domain.TokenGrant, error) {
	var slug string
	args := pgx.NamedArgs{"token_hash": tokenHash(token)}
	err := s.read.QueryRow(ctx, tokenSlugSQL, args).Scan(&slug)
	if err == nil {
		return s.TenantForToken(ctx, slug, token)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return domain.TokenGrant{}, pg.Translate(err)
	}
	if strings.HasPrefix(token, domain.AdminTokenPrefix) {
		var admin bool
		if err := s.read.QueryRow(ctx, workingAdminTokenSQL, args).Scan(&admin); err != nil {
			return domain.TokenGrant{}, pg.Translate(err)
		}
		if admin {
			return domain.TokenGrant{}, domain.Errorf(domain.EFORBIDDEN,
				"this is an admin token, which belongs to no tenant; this takes a tenant's API token (tidemark token create)")
		}
	}
	return domain.TokenGrant{}, domain.Errorf(domain.EUNAUTHORIZED, "invalid, expired or revoked API token")
}
