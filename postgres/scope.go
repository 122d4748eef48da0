package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
)

// ProviderScopes implements domain.ProviderService.
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

// SaveProviderScope implements domain.ProviderService. The provider
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
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds, identifier_rule, enabled)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (tenant_id, provider_id, object_type, action) DO UPDATE SET
		  ttl_seconds = EXCLUDED.ttl_seconds, identifier_rule = EXCLUDED.identifier_rule,
		  enabled = EXCLUDED.enabled, updated_at = now()`,
		tenantID, providerID, sc.ObjectType, sc.Action, int64(sc.TTL/time.Second), sc.IdentifierRule.String(), sc.Enabled)
	return translate(err)
}
