package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const providerScopesSQL = `
SELECT object_type, action, ttl_seconds, identifier_rule, enabled FROM scopes
WHERE tenant_id = @tenant_id AND provider_id = @provider_id
ORDER BY object_type, action`

// scopeForUpdateSQL reads the scope an edit starts from, if it exists.
const scopeForUpdateSQL = `
SELECT ttl_seconds, identifier_rule, enabled FROM scopes
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND action = @action
FOR UPDATE`

// saveScopeSQL takes updated_at from VALUES: Citus evaluates now() there
// on the coordinator, and refuses it in DO UPDATE SET.
const saveScopeSQL = `
INSERT INTO scopes (tenant_id, provider_id, object_type, action, ttl_seconds, identifier_rule, enabled, updated_at)
VALUES (@tenant_id, @provider_id, @object_type, @action, @ttl_seconds, @identifier_rule, @enabled, now())
ON CONFLICT (tenant_id, provider_id, object_type, action) DO UPDATE SET
  ttl_seconds = EXCLUDED.ttl_seconds, identifier_rule = EXCLUDED.identifier_rule,
  enabled = EXCLUDED.enabled, updated_at = EXCLUDED.updated_at`

// ProviderScopes implements domain.ProviderService.
func (s *providers) ProviderScopes(ctx context.Context, tenantID, providerID int64) ([]domain.Scope, error) {
	rows, err := s.read.Query(ctx, providerScopesSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID})
	if err != nil {
		return nil, pg.Translate(err)
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
	return out, pg.Translate(err)
}

// SaveProviderScope implements domain.ProviderService. The provider is
// locked first, so that an unknown one is ENOTFOUND rather than a foreign
// key violation, and so is the scope, so that the audit log's before and
// after are those of this edit.
func (s *providers) SaveProviderScope(ctx context.Context, tenantID, providerID int64, sc domain.Scope) error {
	if err := domain.ValidateScopeName(sc.ScopeName); err != nil {
		return err
	}
	if err := domain.ValidateTTL(sc.TTL); err != nil {
		return err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"object_type": sc.ObjectType, "action": sc.Action, "ttl_seconds": int64(sc.TTL / time.Second),
		"identifier_rule": sc.IdentifierRule.String(), "enabled": sc.Enabled}
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		name, err := pg.LockProvider(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		var before scopeSettings
		err = tx.QueryRow(ctx, scopeForUpdateSQL, args).Scan(&before.ttlSeconds, &before.rule, &before.enabled)
		existed := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return pg.Translate(err)
		}
		if _, err := tx.Exec(ctx, saveScopeSQL, args); err != nil {
			return pg.Translate(err)
		}
		if err := pg.NotifyEndpoints(ctx, tx, tenantID); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditScopeUpdate, name+" "+sc.ScopeName.String(), scopeSummary(existed, before, sc))
	})
}

// scopeSettings are a scope's stored settings.
type scopeSettings struct {
	ttlSeconds int64
	rule       string
	enabled    bool
}

// scopeSummary says what an edit changed: TTL, identifier rule and
// enabled, as before → after, or the settings of a new scope.
func scopeSummary(existed bool, before scopeSettings, after domain.Scope) string {
	ttl, rule := time.Duration(before.ttlSeconds)*time.Second, after.IdentifierRule.String()
	if !existed {
		return fmt.Sprintf("created: TTL %s, identifier %s, enabled %t", ttlText(after.TTL), rule, after.Enabled)
	}
	var changes []string
	if ttl != after.TTL {
		changes = append(changes, fmt.Sprintf("TTL %s → %s", ttlText(ttl), ttlText(after.TTL)))
	}
	if before.rule != rule {
		changes = append(changes, fmt.Sprintf("identifier %s → %s", before.rule, rule))
	}
	if before.enabled != after.Enabled {
		changes = append(changes, fmt.Sprintf("enabled %t → %t", before.enabled, after.Enabled))
	}
	if len(changes) == 0 {
		return fmt.Sprintf("unchanged: TTL %s, identifier %s, enabled %t", ttlText(after.TTL), rule, after.Enabled)
	}
	return strings.Join(changes, "; ")
}

// ttlText writes a TTL in days when it is whole days, as the console sets it.
func ttlText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return d.String()
}
