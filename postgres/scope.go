package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tidemark/tidemark/domain"
)

const providerScopesSQL = `
SELECT object_type, action, ttl_seconds, identifier_rule, enabled FROM scopes
WHERE tenant_id = @tenant_id AND provider_id = @provider_id
ORDER BY object_type, action`

const providerExistsSQL = `SELECT EXISTS (SELECT FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id)`

const saveScopeSQL = `
INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds, identifier_rule, enabled)
VALUES (@tenant_id, @provider_id, @object_type, @action, @ttl_seconds, @identifier_rule, @enabled)
ON CONFLICT (tenant_id, provider_id, object_type, action) DO UPDATE SET
  ttl_seconds = EXCLUDED.ttl_seconds, identifier_rule = EXCLUDED.identifier_rule,
  enabled = EXCLUDED.enabled, updated_at = now()`

// ProviderScopes implements domain.ProviderService.
func (s *Store) ProviderScopes(ctx context.Context, tenantID, providerID int64) ([]domain.Scope, error) {
	rows, err := s.read.Query(ctx, providerScopesSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID})
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
	err := s.pool.QueryRow(ctx, providerExistsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).
		Scan(&exists)
	if err != nil {
		return translate(err)
	}
	if !exists {
		return notFound("provider not found")
	}
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, saveScopeSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"object_type": sc.ObjectType, "action": sc.Action, "ttl_seconds": int64(sc.TTL / time.Second),
		"identifier_rule": sc.IdentifierRule.String(), "enabled": sc.Enabled})
	return translate(err)
}
