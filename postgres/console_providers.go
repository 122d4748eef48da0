package postgres

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

var _ domain.ProviderAdminService = (*Store)(nil)

// providerSummarySQL lists providers with their delivery activity. The last
// delivery is searched only back to the provider's latest counter bucket (or
// the last day, whichever is earlier), so an index range bounds the scan
// instead of the whole delivery log.
const providerSummarySQL = `
SELECT p.id, p.name, p.kind, p.created_at, p.config,
       (SELECT count(*) FROM provider_secrets s
        WHERE s.tenant_id = p.tenant_id AND s.provider_id = p.id AND s.retired_at IS NULL),
       (SELECT count(*) FROM deliveries d
        WHERE d.tenant_id = p.tenant_id AND d.provider_id = p.id AND d.received_at > now() - interval '24 hours'),
       (SELECT max(d.received_at) FROM deliveries d
        WHERE d.tenant_id = p.tenant_id AND d.provider_id = p.id
          AND d.received_at >= least(now() - interval '24 hours',
                                     (SELECT max(c.bucket) FROM outcome_counters c
                                      WHERE c.tenant_id = p.tenant_id AND c.provider_id = p.id)))
FROM providers p
WHERE p.tenant_id = $1 AND ($2::text IS NULL OR p.name = $2)
ORDER BY p.name`

// ProviderSummaries implements domain.ProviderAdminService.
func (s *Store) ProviderSummaries(ctx context.Context, tenantID int64) ([]domain.ProviderSummary, error) {
	return s.providerSummaries(ctx, tenantID, nil)
}

// ProviderSummary implements domain.ProviderAdminService.
func (s *Store) ProviderSummary(ctx context.Context, tenantID int64, name string) (domain.ProviderSummary, error) {
	ps, err := s.providerSummaries(ctx, tenantID, &name)
	if err != nil {
		return domain.ProviderSummary{}, err
	}
	if len(ps) == 0 {
		return domain.ProviderSummary{}, notFound("provider %q not found", name)
	}
	return ps[0], nil
}

func (s *Store) providerSummaries(ctx context.Context, tenantID int64, name *string) ([]domain.ProviderSummary, error) {
	rows, err := s.pool.Query(ctx, providerSummarySQL, tenantID, name)
	if err != nil {
		return nil, translate(err)
	}
	var out []domain.ProviderSummary
	for rows.Next() {
		p := domain.ProviderSummary{Provider: domain.Provider{TenantID: tenantID}}
		var last *time.Time
		if err := rows.Scan(&p.ID, &p.Name, &p.Kind, &p.CreatedAt, &p.Config, &p.ActiveSecrets, &p.Deliveries24h, &last); err != nil {
			return nil, translate(err)
		}
		if last != nil {
			p.LastDeliveryAt = *last
		}
		out = append(out, p)
	}
	return out, translate(rows.Err())
}

// ConnectProvider implements domain.ProviderAdminService. The provider is
// created by CreateProviderWithConfig, with its settings and (unless the
// kind signs nothing) its first secret.
func (s *Store) ConnectProvider(ctx context.Context, tenantID int64, name, kind, secret string, config map[string]string) (domain.Provider, error) {
	if err := domain.ValidateSlug("provider", name); err != nil {
		return domain.Provider{}, err
	}
	if err := domain.ValidateConnectableKind(kind); err != nil {
		return domain.Provider{}, err
	}
	var slug string
	err := s.pool.QueryRow(ctx, `SELECT slug FROM tenants WHERE id = $1`, tenantID).Scan(&slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Provider{}, notFound("tenant not found")
	}
	if err != nil {
		return domain.Provider{}, translate(err)
	}
	p, err := s.CreateProviderWithConfig(ctx, slug, name, kind, secret, config)
	if domain.ErrorCode(err) == domain.ECONFLICT {
		return domain.Provider{}, domain.Errorf(domain.ECONFLICT, "a provider named %q already exists in this workspace", name)
	}
	return p, err
}

// ProviderSecrets implements domain.ProviderAdminService.
func (s *Store) ProviderSecrets(ctx context.Context, tenantID, providerID int64) ([]domain.ProviderSecretInfo, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, created_at FROM provider_secrets
		WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL
		ORDER BY id DESC`, tenantID, providerID)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.ProviderSecretInfo, error) {
		var si domain.ProviderSecretInfo
		return si, row.Scan(&si.ID, &si.CreatedAt)
	})
	return out, translate(err)
}

// NewestProviderSecret implements domain.ProviderAdminService.
func (s *Store) NewestProviderSecret(ctx context.Context, tenantID, providerID int64) (string, error) {
	var (
		keyID  string
		sealed []byte
	)
	err := s.pool.QueryRow(ctx, `
		SELECT key_id, ciphertext FROM provider_secrets
		WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL
		ORDER BY id DESC LIMIT 1`, tenantID, providerID).Scan(&keyID, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound("the provider has no active secret")
	}
	if err != nil {
		return "", translate(err)
	}
	return s.cipher.open(keyID, sealed)
}

// RotateProviderSecret implements domain.ProviderAdminService.
func (s *Store) RotateProviderSecret(ctx context.Context, tenantID, providerID int64, secret string) error {
	return s.RotateSecret(ctx, tenantID, providerID, secret)
}

// RetireProviderSecrets implements domain.ProviderAdminService.
func (s *Store) RetireProviderSecrets(ctx context.Context, tenantID, providerID int64) (int64, error) {
	return s.RetireOldSecrets(ctx, tenantID, providerID)
}

const providerDeliveriesSQL = `
SELECT id::text, received_at, status, signature, coalesce(reason, ''), event_count
FROM deliveries
WHERE tenant_id = $1 AND provider_id = $2
ORDER BY received_at DESC, id DESC
LIMIT $3`

// ProviderDeliveries implements domain.ProviderAdminService.
func (s *Store) ProviderDeliveries(ctx context.Context, tenantID, providerID int64, limit int) ([]domain.ProviderDelivery, error) {
	rows, err := s.pool.Query(ctx, providerDeliveriesSQL, tenantID, providerID, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.ProviderDelivery, error) {
		var d domain.ProviderDelivery
		return d, row.Scan(&d.ID, &d.ReceivedAt, &d.Status, &d.Signature, &d.Reason, &d.EventCount)
	})
	return out, translate(err)
}

// EventOutcome implements domain.ProviderAdminService.
func (s *Store) EventOutcome(ctx context.Context, tenantID, providerID int64, eventID string, since time.Time) (domain.Outcome, error) {
	var o string
	err := s.pool.QueryRow(ctx, `
		SELECT outcome FROM events
		WHERE tenant_id = $1 AND provider_id = $2 AND event_id = $3 AND received_at >= $4
		ORDER BY received_at DESC, seq DESC LIMIT 1`, tenantID, providerID, eventID, since).Scan(&o)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound("no event %q since %s", eventID, since.Format(time.RFC3339))
	}
	if err != nil {
		return "", translate(err)
	}
	return domain.Outcome(o), nil
}

// ProviderScopes implements domain.ProviderAdminService.
func (s *Store) ProviderScopes(ctx context.Context, tenantID, providerID int64) ([]domain.Scope, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT object_type, action, ttl_seconds, identifier_rule, enabled FROM scopes
		WHERE tenant_id = $1 AND provider_id = $2
		ORDER BY object_type, action`, tenantID, providerID)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Scope, error) {
		var (
			sc   domain.Scope
			ttl  int64
			rule string
		)
		if err := row.Scan(&sc.ObjectType, &sc.Action, &ttl, &rule, &sc.Enabled); err != nil {
			return sc, err
		}
		sc.TTL = time.Duration(ttl) * time.Second
		r, err := domain.ParseIdentifierRule(rule)
		if err != nil {
			return sc, fmt.Errorf("scope %s: %w", sc.ScopeName, err)
		}
		sc.IdentifierRule = r
		return sc, nil
	})
	return out, translate(err)
}

// SaveProviderScope implements domain.ProviderAdminService. The provider
// is checked first so that an unknown one is ENOTFOUND, not a foreign key
// violation.
func (s *Store) SaveProviderScope(ctx context.Context, tenantID, providerID int64, sc domain.Scope) error {
	if err := domain.ValidateScopeName(sc.ScopeName); err != nil {
		return err
	}
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM providers WHERE tenant_id = $1 AND id = $2)`,
		tenantID, providerID).Scan(&exists)
	if err != nil {
		return translate(err)
	}
	if !exists {
		return notFound("provider not found")
	}
	return s.UpdateScope(ctx, tenantID, providerID, sc)
}

// APITokens implements domain.ProviderAdminService.
func (s *Store) APITokens(ctx context.Context, tenantID int64) ([]domain.APIToken, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, name, created_at, last_used_at, revoked_at FROM api_tokens
		WHERE tenant_id = $1 ORDER BY id DESC`, tenantID)
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

// CreateAPIToken implements domain.ProviderAdminService.
func (s *Store) CreateAPIToken(ctx context.Context, tenantID int64, name string) (string, error) {
	name = strings.TrimSpace(name)
	if err := domain.ValidateTokenName(name); err != nil {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token := "tmk_" + base64.RawURLEncoding.EncodeToString(raw)
	_, err := s.pool.Exec(ctx, `INSERT INTO api_tokens (tenant_id, name, token_hash) VALUES ($1, $2, $3)`,
		tenantID, name, tokenHash(token))
	if err != nil {
		return "", translate(err)
	}
	return token, nil
}

// RevokeAPIToken implements domain.ProviderAdminService.
func (s *Store) RevokeAPIToken(ctx context.Context, tenantID, tokenID int64) error {
	var found bool
	err := s.pool.QueryRow(ctx, `
		WITH revoked AS (
		    UPDATE api_tokens SET revoked_at = now()
		    WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL
		)
		SELECT EXISTS (SELECT FROM api_tokens WHERE tenant_id = $1 AND id = $2)`,
		tenantID, tokenID).Scan(&found)
	if err != nil {
		return translate(err)
	}
	if !found {
		return notFound("API token %d not found", tokenID)
	}
	return nil
}
