// Package secretkeys checks that the keys a store opened with can open
// every stored provider secret, and seals them all again under the newest.
package secretkeys

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Rekeyer checks and rekeys the provider secrets of pool with keys.
type Rekeyer struct {
	pool    *pgxpool.Pool
	keys    *pg.Keyring
	secrets *pg.Secrets // logs the secrets it cannot open
}

// New returns a Rekeyer of the secrets in pool, sealed with keys.
func New(pool *pgxpool.Pool, keys *pg.Keyring, secrets *pg.Secrets) *Rekeyer {
	return &Rekeyer{pool: pool, keys: keys, secrets: secrets}
}

// activeSecretsAllSQL reads every tenant's active secrets, for the start-up
// check.
const activeSecretsAllSQL = `
SELECT tenant_id, provider_id, id, key_id, aad_version, ciphertext FROM provider_secrets
WHERE retired_at IS NULL
ORDER BY tenant_id, id`

// CheckSecrets tries every active provider secret with the store's keys, as
// serve does before it starts. It returns pg.ErrNoKey on a store without keys,
// and an error naming each key id that active secrets are stored under but
// no key of the store has, with how many secrets and providers use it.
// Secrets that fail under a key the store has are logged and skipped, as
// at ingest: they stop no other provider.
func (s *Rekeyer) CheckSecrets(ctx context.Context) error {
	if !s.keys.CanSeal() {
		return pg.ErrNoKey
	}
	rows, err := s.pool.Query(ctx, activeSecretsAllSQL)
	if err != nil {
		return pg.Translate(err)
	}
	secrets, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil {
		return pg.Translate(err)
	}
	missing := map[string]*keyUse{}
	for _, sec := range secrets {
		_, err := s.keys.Open(sec)
		switch {
		case errors.Is(err, pg.ErrMissingKey):
			u := missing[sec.KeyID]
			if u == nil {
				u = &keyUse{providers: map[int64]bool{}}
				missing[sec.KeyID] = u
			}
			u.secrets++
			u.providers[sec.ProviderID] = true
		case err != nil:
			s.secrets.LogUndecryptable(sec, err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for id, u := range missing {
		parts = append(parts, fmt.Sprintf("key id %s (%d active secrets of %d providers)", id, u.secrets, len(u.providers)))
	}
	sort.Strings(parts)
	return fmt.Errorf("provider secrets are stored under keys that TIDEMARK_ENCRYPTION_KEY does not hold: %s; "+
		"it holds key id %s. Set it to the key those secrets were stored with (several keys comma-separated, "+
		"the one that seals new secrets first)", strings.Join(parts, ", "), strings.Join(s.keys.IDs(), ", "))
}

// keyUse counts what a missing key would open.
type keyUse struct {
	secrets   int
	providers map[int64]bool // keyed by provider id; ids are unique across tenants
}

// rekeyBatchSQL locks the next batch of secrets, retired ones included,
// that are not sealed under @key_id bound to their provider.
const rekeyBatchSQL = `
SELECT tenant_id, provider_id, id, key_id, aad_version, ciphertext FROM provider_secrets
WHERE (tenant_id, id) > (@after_tenant, @after_id) AND (key_id <> @key_id OR aad_version <> @aad_version)
ORDER BY tenant_id, id
LIMIT @limit
FOR UPDATE`

// rekeySecretsSQL stores a batch of re-sealed secrets.
const rekeySecretsSQL = `
UPDATE provider_secrets ps SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[]) AS u(tenant_id, id, ciphertext)
WHERE ps.tenant_id = u.tenant_id AND ps.id = u.id`

// RekeySecrets re-encrypts every provider secret (retired ones included)
// that is not yet sealed under the store's first key and bound to its
// tenant and provider, batchSize (at least 1) secrets per transaction, and
// returns how many it changed. A secret it cannot decrypt is left as it is
// and logged; once the rest is done, such secrets make it return an error
// saying how many there are and, for a missing key, its id. Without keys it
// returns pg.ErrNoKey.
func (s *Rekeyer) RekeySecrets(ctx context.Context, batchSize int) (int64, error) {
	if !s.keys.CanSeal() {
		return 0, pg.ErrNoKey
	}
	var (
		changed, failed int64
		missing         = map[string]int{}
		afterTenant     int64
		afterID         int64
	)
	batchSize = max(batchSize, 1)
	for {
		var n int
		var batchChanged int64
		err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, rekeyBatchSQL, pgx.NamedArgs{"after_tenant": afterTenant, "after_id": afterID,
				"key_id": s.keys.SealerID(), "aad_version": pg.AADProvider, "limit": batchSize})
			if err != nil {
				return pg.Translate(err)
			}
			batch, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
			if err != nil || len(batch) == 0 {
				return pg.Translate(err)
			}
			n = len(batch)
			afterTenant, afterID = batch[n-1].TenantID, batch[n-1].ID
			var tenantIDs, ids []int64
			var ciphertexts [][]byte
			for _, sec := range batch {
				plain, err := s.keys.Open(sec)
				if errors.Is(err, pg.ErrMissingKey) {
					missing[sec.KeyID]++
					continue
				}
				if err != nil {
					s.secrets.LogUndecryptable(sec, err)
					failed++
					continue
				}
				sealed, err := s.keys.Seal(sec.TenantID, sec.ProviderID, plain)
				if err != nil {
					return err
				}
				tenantIDs, ids = append(tenantIDs, sec.TenantID), append(ids, sec.ID)
				ciphertexts = append(ciphertexts, sealed.Ciphertext)
			}
			tag, err := tx.Exec(ctx, rekeySecretsSQL, pgx.NamedArgs{"key_id": s.keys.SealerID(), "aad_version": pg.AADProvider,
				"tenant_ids": tenantIDs, "ids": ids, "ciphertexts": ciphertexts})
			batchChanged = tag.RowsAffected()
			return pg.Translate(err)
		})
		if err != nil {
			return changed, err
		}
		changed += batchChanged
		if n < batchSize {
			break
		}
	}
	if len(missing) == 0 && failed == 0 {
		return changed, nil
	}
	var parts []string
	for id, count := range missing {
		parts = append(parts, fmt.Sprintf("%d under key id %s, which TIDEMARK_ENCRYPTION_KEY does not hold", count, id))
	}
	sort.Strings(parts)
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d that failed to decrypt (logged with their ids)", failed))
	}
	return changed, fmt.Errorf("some provider secrets were left as they were: %s", strings.Join(parts, "; "))
}
