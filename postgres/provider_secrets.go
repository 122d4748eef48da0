package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// providersWithoutSecretSQL lists, across tenants, the providers of the
// given kinds without an active secret: those connected before their kind
// needed one.
const providersWithoutSecretSQL = `
SELECT p.tenant_id, t.slug, p.id, p.name, p.kind, p.config
FROM providers p JOIN tenants t ON t.id = p.tenant_id
WHERE p.kind = ANY(@kinds::text[]) AND p.removed_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM provider_secrets s
                  WHERE s.tenant_id = p.tenant_id AND s.provider_id = p.id AND s.retired_at IS NULL)
ORDER BY p.tenant_id, p.id`

const activeSecretCountSQL = `
SELECT count(*) FROM provider_secrets
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL`

// markActiveSecretsUnshownSQL flags the secret just issued to a provider
// that had none as not yet shown to an operator.
const markActiveSecretsUnshownSQL = `
UPDATE provider_secrets SET shown = false
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL`

// IssueMissingSecrets gives every provider of kinds that has no active
// secret one from issue, marked as not yet shown, and returns the providers
// that got one. It is safe to run from several processes at once: each
// provider's row is locked while its secrets are counted and the new one is
// added, so a provider gets exactly one.
func (s *providers) IssueMissingSecrets(ctx context.Context, kinds []string, issue func(domain.Provider) (string, error)) ([]domain.Provider, error) {
	rows, err := s.pool.Query(ctx, providersWithoutSecretSQL, pgx.NamedArgs{"kinds": kinds})
	if err != nil {
		return nil, pg.Translate(err)
	}
	candidates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.Provider, error) {
		var p domain.Provider
		return p, row.Scan(&p.TenantID, &p.TenantSlug, &p.ID, &p.Name, &p.Kind, &p.Config)
	})
	if err != nil {
		return nil, pg.Translate(err)
	}
	var issued []domain.Provider
	for _, p := range candidates {
		secret, err := issue(p)
		if err != nil {
			return issued, err
		}
		added := false
		err = pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
			args := pgx.NamedArgs{"tenant_id": p.TenantID, "provider_id": p.ID}
			_, err := pg.LockProvider(ctx, tx, p.TenantID, p.ID)
			if domain.ErrorCode(err) == domain.ENOTFOUND {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			var active int
			if err := tx.QueryRow(ctx, activeSecretCountSQL, args).Scan(&active); err != nil || active > 0 {
				return pg.Translate(err) // another process issued one first
			}
			if err := s.addSecret(ctx, tx, p.TenantID, p.ID, secret); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, markActiveSecretsUnshownSQL, args)
			added = err == nil
			return pg.Translate(err)
		})
		if err != nil {
			return issued, err
		}
		if added {
			issued = append(issued, p)
		}
	}
	return issued, nil
}

// unshownProviderSecretSQL returns the provider's newest active secret when
// it has not been shown to an operator yet.
const unshownProviderSecretSQL = `
SELECT id, created_at, key_id, aad_version, ciphertext FROM (
    SELECT id, created_at, key_id, aad_version, ciphertext, shown FROM provider_secrets
    WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL
    ORDER BY created_at DESC, id DESC LIMIT 1) newest
WHERE NOT shown`

// UnshownProviderSecret implements domain.ProviderService.
func (s *providers) UnshownProviderSecret(ctx context.Context, tenantID, providerID int64) (domain.ProviderSecretInfo, string, error) {
	var si domain.ProviderSecretInfo
	sealed := pg.SealedSecret{TenantID: tenantID, ProviderID: providerID}
	err := s.read.QueryRow(ctx, unshownProviderSecretSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).
		Scan(&si.ID, &si.CreatedAt, &sealed.KeyID, &sealed.AADVersion, &sealed.Ciphertext)
	if errors.Is(err, pgx.ErrNoRows) {
		return si, "", pg.NotFound("the provider has no secret waiting to be shown")
	}
	if err != nil {
		return si, "", pg.Translate(err)
	}
	sealed.ID = si.ID
	secret, err := s.keys.Open(sealed)
	return si, secret, err
}

const markProviderSecretShownSQL = `
UPDATE provider_secrets SET shown = true
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND id = @id`

// MarkProviderSecretShown implements domain.ProviderService.
func (s *providers) MarkProviderSecretShown(ctx context.Context, tenantID, providerID, secretID int64) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		name, err := pg.LockProvider(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, markProviderSecretShownSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "id": secretID})
		if err != nil {
			return pg.Translate(err)
		}
		if tag.RowsAffected() == 0 {
			return pg.NotFound("secret not found")
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderSecretShown, name,
			fmt.Sprintf("issued secret %d confirmed as set up at the provider; no longer shown", secretID))
	})
}
