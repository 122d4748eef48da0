package postgres

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
)

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

const apiTokensSQL = `
SELECT id, name, created_at, last_used_at, revoked_at FROM api_tokens
WHERE tenant_id = @tenant_id ORDER BY id DESC`

const createAPITokenSQL = `INSERT INTO api_tokens (tenant_id, name, token_hash) VALUES (@tenant_id, @name, @token_hash)`

// revokeAPITokenSQL revokes an active token and answers whether the token
// exists at all, so revoking twice is not an error.
const revokeAPITokenSQL = `
WITH revoked AS (
    UPDATE api_tokens SET revoked_at = now()
    WHERE tenant_id = @tenant_id AND id = @id AND revoked_at IS NULL
)
SELECT EXISTS (SELECT FROM api_tokens WHERE tenant_id = @tenant_id AND id = @id)`

// APITokens implements domain.TokenService.
func (s *Store) APITokens(ctx context.Context, tenantID int64) ([]domain.APIToken, error) {
	rows, err := s.read.Query(ctx, apiTokensSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.APIToken, error) {
		var (
			t             domain.APIToken
			used, revoked *time.Time
		)
		if err := row.Scan(&t.ID, &t.Name, &t.CreatedAt, &used, &revoked); err != nil {
			return t, err
		}
		if used != nil {
			t.LastUsedAt = *used
		}
		if revoked != nil {
			t.RevokedAt = *revoked
		}
		return t, nil
	})
	return out, translate(err)
}

// CreateAPIToken implements domain.TokenService.
func (s *Store) CreateAPIToken(ctx context.Context, tenantID int64, name string) (string, error) {
	name = strings.TrimSpace(name)
	if err := domain.ValidateTokenName(name); err != nil {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token := "tmk_" + base64.RawURLEncoding.EncodeToString(raw)
	_, err := s.pool.Exec(ctx, createAPITokenSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": name,
		"token_hash": tokenHash(token)})
	if err != nil {
		return "", translate(err)
	}
	return token, nil
}

// RevokeAPIToken implements domain.TokenService.
func (s *Store) RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error {
	var found bool
	err := s.pool.QueryRow(ctx, revokeAPITokenSQL, pgx.NamedArgs{"tenant_id": tenantID, "id": tokenID}).Scan(&found)
	if err != nil {
		return translate(err)
	}
	if !found {
		return notFound("API token %d not found", tokenID)
	}
	return nil
}

// tokenSQL resolves and touches an API token in one statement.
const tokenSQL = `
UPDATE api_tokens k SET last_used_at = now()
FROM tenants t
WHERE k.token_hash = @token_hash AND k.revoked_at IS NULL AND t.id = k.tenant_id
RETURNING t.id, t.slug, t.name, t.created_at`

// TenantForToken implements domain.TokenService. An unknown or revoked token
// is an EUNAUTHORIZED error.
func (s *Store) TenantForToken(ctx context.Context, token string) (domain.Tenant, error) {
	var t domain.Tenant
	err := s.read.QueryRow(ctx, tokenSQL, pgx.NamedArgs{"token_hash": tokenHash(token)}).Scan(&t.ID, &t.Slug, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, domain.Errorf(domain.EUNAUTHORIZED, "invalid or revoked API token")
	}
	return t, translate(err)
}
