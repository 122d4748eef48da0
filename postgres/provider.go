package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const addSecretSQL = `
INSERT INTO provider_secrets (tenant_id, provider_id, key_id, aad_version, ciphertext)
VALUES (@tenant_id, @provider_id, @key_id, @aad_version, @ciphertext)`

// addSecret seals a new secret under the first key, bound to its provider;
// without keys it returns ErrNoKey.
func (s *providers) addSecret(ctx context.Context, tx pgx.Tx, tenantID, providerID int64, secret string) error {
	sealed, err := s.keys.Seal(tenantID, providerID, secret)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, addSecretSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	if err != nil {
		return pg.Translate(err)
	}
	return pg.NotifyEndpoints(ctx, tx, tenantID)
}

const providerNamesSQL = `SELECT name FROM providers WHERE tenant_id = @tenant_id ORDER BY name`

// ProviderNames implements domain.ProviderService.
func (s *providers) ProviderNames(ctx context.Context, tenantID int64) ([]string, error) {
	rows, err := s.read.Query(ctx, providerNamesSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, pg.Translate(err)
}

// providerSummarySQL lists providers with their delivery activity. The last
// delivery is searched only back to the provider's latest counter bucket (or
// the last day, whichever is earlier), so an index range bounds the scan
// instead of the whole delivery log.
const providerSummarySQL = `
SELECT p.id, p.name, p.kind, p.created_at, p.config, coalesce(p.max_body, 0), p.max_future_skew_seconds,
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
WHERE p.tenant_id = @tenant_id AND (@name::text IS NULL OR p.name = @name) AND p.removed_at IS NULL
ORDER BY p.name`

// ProviderSummaries implements domain.ProviderService.
func (s *providers) ProviderSummaries(ctx context.Context, tenantID int64) ([]domain.ProviderSummary, error) {
	return s.providerSummaries(ctx, tenantID, nil)
}

// ProviderSummary implements domain.ProviderService.
func (s *providers) ProviderSummary(ctx context.Context, tenantID int64, name string) (domain.ProviderSummary, error) {
	ps, err := s.providerSummaries(ctx, tenantID, &name)
	if err != nil {
		return domain.ProviderSummary{}, err
	}
	if len(ps) == 0 {
		return domain.ProviderSummary{}, pg.NotFound("provider %q not found", name)
	}
	return ps[0], nil
}

func (s *providers) providerSummaries(ctx context.Context, tenantID int64, name *string) ([]domain.ProviderSummary, error) {
	rows, err := s.read.Query(ctx, providerSummarySQL, pgx.NamedArgs{"tenant_id": tenantID, "name": name})
	if err != nil {
		return nil, pg.Translate(err)
	}
	var out []domain.ProviderSummary
	for rows.Next() {
		p := domain.ProviderSummary{Provider: domain.Provider{TenantID: tenantID}}
		var (
			last *time.Time
			skew int64
		)
		if err := rows.Scan(&p.ID, &p.Name, &p.Kind, &p.CreatedAt, &p.Config, &p.MaxBody, &skew,
			&p.ActiveSecrets, &p.Deliveries24h, &last); err != nil {
			return nil, pg.Translate(err)
		}
		p.MaxFutureSkew = time.Duration(skew) * time.Second
		if last != nil {
			p.LastDeliveryAt = *last
		}
		out = append(out, p)
	}
	return out, pg.Translate(rows.Err())
}

// ConnectProvider implements domain.ProviderService: the provider, its
// settings and (unless the kind signs nothing) its first secret, in one
// transaction.
func (s *providers) ConnectProvider(ctx context.Context, tenantID int64, name, kind, secret string, config map[string]string) (domain.Provider, error) {
	if err := domain.ValidateSlug("provider", name); err != nil {
		return domain.Provider{}, err
	}
	if config == nil {
		config = map[string]string{}
	}
	p := domain.Provider{TenantID: tenantID, Name: name, Kind: kind, Config: config}
	var skew int64
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, tenantSlugSQL, pgx.NamedArgs{"tenant_id": tenantID}).Scan(&p.TenantSlug)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("tenant not found")
		}
		if err != nil {
			return pg.Translate(err)
		}
		err = tx.QueryRow(ctx, connectProviderSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": name, "kind": kind,
			"config": config}).Scan(&p.ID, &p.CreatedAt, &skew)
		if pg.UniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "a provider named %q already exists in this workspace", name)
		}
		if err != nil {
			return pg.Translate(err)
		}
		if err := pg.NotifyEndpoints(ctx, tx, tenantID); err != nil {
			return err
		}
		if secret != "" {
			if err := s.checkSealingKey(ctx, tx); err != nil {
				return err
			}
			if err := s.addSecret(ctx, tx, tenantID, p.ID, secret); err != nil {
				return err
			}
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderCreate, name, connectSummary(kind, config, secret != ""))
	})
	if err != nil {
		return domain.Provider{}, err
	}
	p.MaxFutureSkew = time.Duration(skew) * time.Second
	return p, nil
}

// connectSummary names a new provider's kind and settings, and whether it
// got a secret: never the secret, which is not among its settings.
func connectSummary(kind string, config map[string]string, secret bool) string {
	keys := slices.Sorted(maps.Keys(config))
	settings := make([]string, len(keys))
	for i, k := range keys {
		settings[i] = k + "=" + config[k]
	}
	summary := "kind " + kind
	if len(settings) > 0 {
		summary += "; settings " + strings.Join(settings, ", ")
	}
	if secret {
		return summary + "; one secret"
	}
	return summary + "; no secret"
}

// tenantSlugSQL reads the slug of the tenant a provider is connected to.
const tenantSlugSQL = `SELECT slug FROM tenants WHERE id = @tenant_id`

// connectProviderSQL inserts a provider. A single-row INSERT is one
// tenant's statement, which Citus sends to its worker as it is.
const connectProviderSQL = `
INSERT INTO providers (tenant_id, name, kind, config) VALUES (@tenant_id, @name, @kind, @config)
RETURNING id, created_at, max_future_skew_seconds`

const providerSecretsSQL = `
SELECT id, created_at FROM provider_secrets
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL
ORDER BY created_at DESC, id DESC`

const activeSecretsSQL = `
SELECT tenant_id, provider_id, id, key_id, aad_version, ciphertext FROM provider_secrets
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL
ORDER BY created_at DESC, id DESC`

// ProviderSecrets implements domain.ProviderService.
func (s *providers) ProviderSecrets(ctx context.Context, tenantID, providerID int64) ([]domain.ProviderSecretInfo, error) {
	rows, err := s.read.Query(ctx, providerSecretsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.ProviderSecretInfo, error) {
		var si domain.ProviderSecretInfo
		return si, row.Scan(&si.ID, &si.CreatedAt)
	})
	return out, pg.Translate(err)
}

// NewestProviderSecret implements domain.ProviderService: the newest active
// secret that can be decrypted (one that cannot is logged and skipped).
func (s *providers) NewestProviderSecret(ctx context.Context, tenantID, providerID int64) (string, error) {
	rows, err := s.read.Query(ctx, activeSecretsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID})
	if err != nil {
		return "", pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil {
		return "", pg.Translate(err)
	}
	if len(sealed) == 0 {
		return "", pg.NotFound("the provider has no active secret")
	}
	secrets, err := s.secrets.OpenAll(sealed)
	if err != nil {
		return "", err
	}
	if len(secrets) == 0 {
		return "", pg.NotFound("none of the provider's active secrets can be decrypted with the configured keys")
	}
	return secrets[0], nil
}

// RotateProviderSecret implements domain.ProviderService. The provider row
// is locked so that concurrent rotations cannot leave three active secrets.
func (s *providers) RotateProviderSecret(ctx context.Context, tenantID, providerID int64, secret string) error {
	return pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.checkSealingKey(ctx, tx); err != nil {
			return err
		}
		name, retired, err := s.retireOlderSecrets(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		if err := s.addSecret(ctx, tx, tenantID, providerID, secret); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderRotate, name,
			fmt.Sprintf("new secret added; %s retired", plural(retired, "older secret")))
	})
}

// retireOlderSecretsSQL retires every active secret of a provider but one.
const retireOlderSecretsSQL = `
UPDATE provider_secrets SET retired_at = now()
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND retired_at IS NULL AND id <> @keep`

// RetireProviderSecrets implements domain.ProviderService: it ends a
// rotation, so only the newest secret that decrypts stays active.
func (s *providers) RetireProviderSecrets(ctx context.Context, tenantID, providerID int64) (int64, error) {
	var retired int64
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		name, n, err := s.retireOlderSecrets(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		retired = n
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderRetire, name,
			fmt.Sprintf("%s retired; the newest stays", plural(retired, "older secret")))
	})
	return retired, err
}

// retireOlderSecrets locks the provider, retires its active secrets but
// the newest that the store's keys decrypt (a secret sealed under a key no
// node holds must not be the one kept), and returns its name and how many
// it retired.
func (s *providers) retireOlderSecrets(ctx context.Context, tx pgx.Tx, tenantID, providerID int64) (name string, retired int64, err error) {
	if name, err = pg.LockProvider(ctx, tx, tenantID, providerID); err != nil {
		return "", 0, err
	}
	keep, err := s.newestOpening(ctx, tx, tenantID, providerID)
	if err != nil {
		return "", 0, err
	}
	tag, err := tx.Exec(ctx, retireOlderSecretsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "keep": keep})
	if err != nil {
		return "", 0, pg.Translate(err)
	}
	return name, tag.RowsAffected(), pg.NotifyEndpoints(ctx, tx, tenantID)
}

// plural writes n things, for summaries.
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

const providerDeliveriesSQL = `
SELECT id::text, received_at, status, signature, coalesce(reason, ''), event_count
FROM deliveries
WHERE tenant_id = @tenant_id AND provider_id = @provider_id
ORDER BY received_at DESC, id DESC
LIMIT @limit`

// ProviderDeliveries implements domain.ProviderService.
func (s *providers) ProviderDeliveries(ctx context.Context, tenantID, providerID int64, limit int) ([]domain.ProviderDelivery, error) {
	rows, err := s.read.Query(ctx, providerDeliveriesSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
		"limit": limit})
	if err != nil {
		return nil, pg.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.ProviderDelivery, error) {
		var d domain.ProviderDelivery
		return d, row.Scan(&d.ID, &d.ReceivedAt, &d.Status, &d.Signature, &d.Reason, &d.EventCount)
	})
	return out, pg.Translate(err)
}

// setProviderLimitsSQL changes the limits whose set_ flag is true; a
// max_body of 0 returns the provider to its kind's default (NULL).
const setProviderLimitsSQL = `
UPDATE providers
SET max_body = CASE WHEN @set_max_body::boolean THEN nullif(@max_body::bigint, 0) ELSE max_body END,
    max_future_skew_seconds = CASE WHEN @set_max_future_skew::boolean THEN @max_future_skew_seconds::integer
                                   ELSE max_future_skew_seconds END
WHERE tenant_id = @tenant_id AND id = @provider_id
RETURNING name, kind, created_at, config, coalesce(max_body, 0), max_future_skew_seconds,
          (SELECT slug FROM tenants WHERE id = @tenant_id)`

// providerLimitsSQL reads the limits a change starts from, in the
// transaction that holds the provider's lock.
const providerLimitsSQL = `
SELECT coalesce(max_body, 0), max_future_skew_seconds FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id`

// SetProviderLimits implements domain.ProviderService.
func (s *providers) SetProviderLimits(ctx context.Context, tenantID, providerID int64, l domain.ProviderLimits) (domain.Provider, error) {
	if err := l.Validate(); err != nil {
		return domain.Provider{}, err
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "set_max_body": l.MaxBody != nil,
		"max_body": int64(0), "set_max_future_skew": l.MaxFutureSkew != nil, "max_future_skew_seconds": int32(0)}
	if l.MaxBody != nil {
		args["max_body"] = *l.MaxBody
	}
	if l.MaxFutureSkew != nil {
		args["max_future_skew_seconds"] = int32(*l.MaxFutureSkew / time.Second)
	}
	p := domain.Provider{TenantID: tenantID, ID: providerID}
	var skew int64
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := pg.LockProvider(ctx, tx, tenantID, providerID); err != nil {
			return err
		}
		var oldBody, oldSkew int64
		if err := tx.QueryRow(ctx, providerLimitsSQL, args).Scan(&oldBody, &oldSkew); err != nil {
			return pg.Translate(err)
		}
		err := tx.QueryRow(ctx, setProviderLimitsSQL, args).Scan(&p.Name, &p.Kind, &p.CreatedAt, &p.Config, &p.MaxBody,
			&skew, &p.TenantSlug)
		if err != nil {
			return pg.Translate(err)
		}
		if err := pg.NotifyEndpoints(ctx, tx, tenantID); err != nil {
			return err
		}
		var changes []string
		if l.MaxBody != nil {
			changes = append(changes, fmt.Sprintf("max body %s → %s", bodyLimit(oldBody), bodyLimit(p.MaxBody)))
		}
		if l.MaxFutureSkew != nil {
			changes = append(changes, fmt.Sprintf("max future skew %s → %s",
				time.Duration(oldSkew)*time.Second, time.Duration(skew)*time.Second))
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditProviderUpdate, p.Name, strings.Join(changes, "; "))
	})
	if err != nil {
		return domain.Provider{}, err
	}
	p.MaxFutureSkew = time.Duration(skew) * time.Second
	return p, nil
}

// bodyLimit is a provider's body limit for a summary; 0 is its kind's default.
func bodyLimit(n int64) string {
	if n == 0 {
		return "the kind's default"
	}
	return domain.FormatByteSize(n)
}
