package access

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

var _ domain.AdminTokenService = (*Tokens)(nil)

// adminCreatorSQL reads the operator an admin token will answer for,
// locking their row until the token is stored, so that taking their admin
// flag away either waits for it or is seen by it.
const adminCreatorSQL = `SELECT id, is_admin AND disabled_at IS NULL FROM users WHERE email = @email FOR SHARE`

const createAdminTokenSQL = `
INSERT INTO admin_tokens (name, token_hash, created_by_user_id, created_by, expires_at)
VALUES (@name, @token_hash, @user_id, @created_by, now() + nullif(@lifetime_s::bigint, 0) * interval '1 second')
RETURNING expires_at`

// adminTokenWorks is the condition under which an admin token works: the
// same in its lookup and in its list, so that they cannot disagree.
const adminTokenWorks = `k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
      AND u.is_admin AND u.disabled_at IS NULL`

const adminTokensSQL = `
SELECT k.id, k.name, u.email, k.created_by, k.created_at, k.expires_at, k.last_used_at, k.revoked_at,
       ` + adminTokenWorks + `
FROM admin_tokens k JOIN users u ON u.id = k.created_by_user_id
ORDER BY k.created_at DESC, k.id DESC`

// revokeAdminTokenSQL revokes an active token and answers whether the
// token exists at all, and its name when this revoked it.
const revokeAdminTokenSQL = `
WITH revoked AS (
    UPDATE admin_tokens SET revoked_at = now() WHERE id = @id AND revoked_at IS NULL RETURNING name
)
SELECT EXISTS (SELECT FROM admin_tokens WHERE id = @id), (SELECT name FROM revoked)`

// adminTokenSQL resolves a working admin token: its creator's admin flag
// is read here, at each use, so that no sweep revokes anything.
const adminTokenSQL = `
SELECT k.id, k.name, u.email, k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'
FROM admin_tokens k JOIN users u ON u.id = k.created_by_user_id
WHERE k.token_hash = @token_hash AND ` + adminTokenWorks

// touchAdminTokenSQL records a use, at most once a minute (adminTokenSQL
// says when), so that admin reads do not each write the token's row.
const touchAdminTokenSQL = `UPDATE admin_tokens SET last_used_at = now() WHERE id = @id`

// CreateAdminToken implements domain.AdminTokenService.
func (s *Tokens) CreateAdminToken(ctx context.Context, nt domain.NewAdminToken) (string, error) {
	name := strings.TrimSpace(nt.Name)
	if err := domain.ValidateTokenName(name); err != nil {
		return "", err
	}
	if nt.Lifetime != 0 && (nt.Lifetime < domain.MinTokenLifetime || nt.Lifetime > domain.MaxTokenLifetime) {
		return "", domain.Errorf(domain.EINVALID, "a token's lifetime must be from %s to %d days", domain.MinTokenLifetime,
			domain.MaxTokenLifetime/(24*time.Hour))
	}
	actor, _ := domain.ActorFrom(ctx) // audit refuses a change without one
	raw := make([]byte, 32)
	rand.Read(raw)
	token := domain.AdminTokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	email := domain.NormalizeEmail(nt.CreatorEmail)
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			userID int64
			admin  bool
		)
		err := tx.QueryRow(ctx, adminCreatorSQL, pgx.NamedArgs{"email": email}).Scan(&userID, &admin)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return domain.Errorf(domain.EFORBIDDEN, "there is no operator %s: an admin token answers for an enabled admin", email)
		case err != nil:
			return pg.Translate(err)
		case !admin:
			return domain.Errorf(domain.EFORBIDDEN, "%s is not an enabled admin: an admin token answers for one", email)
		}
		var expires *time.Time
		err = tx.QueryRow(ctx, createAdminTokenSQL, pgx.NamedArgs{"name": name, "token_hash": tokenHash(token),
			"user_id": userID, "created_by": creatorLabel(actor), "lifetime_s": int64(nt.Lifetime / time.Second)}).Scan(&expires)
		if err != nil {
			return pg.Translate(err)
		}
		summary := "for admin " + email
		if expires != nil {
			summary += ", expires " + expires.UTC().Format("2006-01-02 15:04 UTC")
		}
		return pg.Translate(pg.Audit(ctx, tx, 0, domain.AuditAdminTokenCreate, name, summary))
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// AdminTokens implements domain.AdminTokenService.
func (s *Tokens) AdminTokens(ctx context.Context) ([]domain.AdminToken, error) {
	rows, err := s.read.Query(ctx, adminTokensSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AdminToken, error) {
		var (
			t                      domain.AdminToken
			expires, used, revoked *time.Time
		)
		err := row.Scan(&t.ID, &t.Name, &t.Creator, &t.CreatedBy, &t.CreatedAt, &expires, &used, &revoked, &t.Works)
		t.ExpiresAt, t.LastUsedAt, t.RevokedAt = orZero(expires), orZero(used), orZero(revoked)
		return t, err
	})
	return out, pg.Translate(err)
}

// RevokeAdminToken implements domain.AdminTokenService.
func (s *Tokens) RevokeAdminToken(ctx context.Context, tokenID int64) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			found bool
			name  *string
		)
		err := tx.QueryRow(ctx, revokeAdminTokenSQL, pgx.NamedArgs{"id": tokenID}).Scan(&found, &name)
		switch {
		case err != nil:
			return pg.Translate(err)
		case !found:
			return pg.NotFound("admin token %d not found", tokenID)
		case name == nil: // revoked already
			return nil
		}
		return pg.Translate(pg.Audit(ctx, tx, 0, domain.AuditAdminTokenRevoke, *name, ""))
	})
}

// AdminForToken implements domain.AdminTokenService.
func (s *Tokens) AdminForToken(ctx context.Context, token string) (domain.AdminGrant, error) {
	var (
		g     domain.AdminGrant
		touch bool
	)
	args := pgx.NamedArgs{"token_hash": tokenHash(token)}
	err := s.read.QueryRow(ctx, adminTokenSQL, args).Scan(&g.ID, &g.Name, &g.Creator, &touch)
	if err == nil {
		if touch {
			if _, err := s.pool.Exec(ctx, touchAdminTokenSQL, pgx.NamedArgs{"id": g.ID}); err != nil {
				return domain.AdminGrant{}, pg.Translate(err)
			}
		}
		return g, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return g, pg.Translate(err)
	}
	var tenants bool
	if err := s.read.QueryRow(ctx, tokenElsewhereSQL, args).Scan(&tenants); err != nil {
		return domain.AdminGrant{}, pg.Translate(err)
	}
	if tenants {
		return domain.AdminGrant{}, domain.Errorf(domain.EFORBIDDEN,
			"this is a tenant's API token; the admin API takes an admin token (tidemark token create --admin)")
	}
	return domain.AdminGrant{}, domain.Errorf(domain.EUNAUTHORIZED, "invalid, expired or revoked admin token, or its creator is no longer an admin")
}

// workingAdminTokenSQL tells, after a tenant's lookup missed, whether the
// token is a working admin token, which tenant routes answer 404 as they
// answer a token of another tenant.
const workingAdminTokenSQL = `
SELECT EXISTS (SELECT 1 FROM admin_tokens k JOIN users u ON u.id = k.created_by_user_id
               WHERE k.token_hash = @token_hash AND ` + adminTokenWorks + `)`
