// Package secretkeys checks that the keys a store opened with can open
// every stored secret, of providers (their signing secrets and API
// credentials), of destinations (their signing secrets and NATS
// credentials), of apps (their client secrets) and their installs (their
// tokens), and the id hash key, and seals them all again under the
// newest.
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

// Rekeyer checks and rekeys the provider, provider API and destination
// secrets of pool with keys.
type Rekeyer struct {
	pool    *pgxpool.Pool
	keys    *pg.Keyring
	secrets *pg.Secrets // logs the secrets it cannot open
}

// New returns a Rekeyer of the secrets in pools' write pool, sealed with
// keys.
func New(pools pg.Pools, keys *pg.Keyring, secrets *pg.Secrets) *Rekeyer {
	return &Rekeyer{pool: pools.Write, keys: keys, secrets: secrets}
}

// table is one kind of sealed secret: the check and the rekey run the same
// code over each, so a new kind cannot be left out of one of them.
type table struct {
	owner      string        // what a secret belongs to, in errors: "provider", "destination"
	kind       pg.SecretKind // its Uses words the check's count of secrets and owners under a missing key
	activeSQL  string        // every tenant's secrets in use, for the check
	batchSQL   string        // locks the next batch not under @key_id and @aad_version
	updateSQL  string        // stores a batch re-sealed
	aad        int16
	seal       func(k *pg.Keyring, tenantID, ownerID int64, plaintext string) (pg.SealedSecret, error)
	logFailed  func(s *pg.Secrets, sec pg.SealedSecret, err error)
	count      func(r *Rekeyed) *int64 // where a rekey reports how many it changed
	endpoints  bool                    // the secrets are part of webhook endpoints, which nodes cache
	tenantless bool                    // one row for the database, not rows by tenant
}

var tables = []table{
	{owner: "provider", kind: pg.ProviderSecrets, activeSQL: activeSecretsAllSQL, batchSQL: rekeyBatchSQL, updateSQL: rekeySecretsSQL,
		aad: pg.AADProvider, seal: (*pg.Keyring).Seal, logFailed: (*pg.Secrets).LogUndecryptable,
		count: func(r *Rekeyed) *int64 { return &r.Providers }, endpoints: true},
	{owner: "destination", kind: pg.DestinationSecrets, activeSQL: activeDestinationSecretsAllSQL, batchSQL: rekeyDestinationBatchSQL,
		updateSQL: rekeyDestinationSecretsSQL, aad: pg.AADDestination, seal: (*pg.Keyring).SealDestination,
		logFailed: (*pg.Secrets).LogUndecryptableDestination, count: func(r *Rekeyed) *int64 { return &r.Destinations }},
	{owner: "provider API", kind: pg.ProviderAPISecrets, activeSQL: apiCredentialsAllSQL,
		batchSQL: rekeyAPIBatchSQL, updateSQL: rekeyAPISecretsSQL, aad: pg.AADProviderAPI, seal: (*pg.Keyring).SealProviderAPI,
		logFailed: (*pg.Secrets).LogUndecryptableProviderAPI, count: func(r *Rekeyed) *int64 { return &r.APICredentials }},
	{owner: "destination NATS", kind: pg.DestinationNATSSecrets, activeSQL: natsCredentialsAllSQL,
		batchSQL: rekeyNATSBatchSQL, updateSQL: rekeyNATSSecretsSQL, aad: pg.AADDestinationNATS, seal: (*pg.Keyring).SealDestinationNATS,
		logFailed: (*pg.Secrets).LogUndecryptableDestinationNATS, count: func(r *Rekeyed) *int64 { return &r.NATSCredentials }},
	{owner: "id hash key", kind: pg.IDHashKey, activeSQL: idHashKeySQL, batchSQL: rekeyIDHashKeySQL,
		updateSQL: resealIDHashKeySQL, aad: pg.AADIDHashKey,
		seal: func(k *pg.Keyring, _, _ int64, key string) (pg.SealedSecret, error) {
			return k.SealIDHashKey([]byte(key))
		},
		logFailed: (*pg.Secrets).LogUndecryptableIDHashKey, count: func(r *Rekeyed) *int64 { return &r.IDHashKey },
		tenantless: true},
	{owner: "app", kind: pg.AppSecrets, activeSQL: appSecretsAllSQL, batchSQL: rekeyAppBatchSQL, updateSQL: rekeyAppSecretsSQL,
		aad: pg.AADApp, seal: func(k *pg.Keyring, _, appID int64, plaintext string) (pg.SealedSecret, error) {
			return k.SealApp(appID, plaintext)
		},
		logFailed: (*pg.Secrets).LogUndecryptableApp, count: func(r *Rekeyed) *int64 { return &r.Apps }, tenantless: true},
	{owner: "app install", kind: pg.AppInstallTokens, activeSQL: appInstallTokensAllSQL, batchSQL: rekeyAppInstallBatchSQL,
		updateSQL: rekeyAppInstallTokensSQL, aad: pg.AADAppInstallTokens, seal: (*pg.Keyring).SealAppInstallTokens,
		logFailed: (*pg.Secrets).LogUndecryptableAppInstall, count: func(r *Rekeyed) *int64 { return &r.AppInstalls }},
	{owner: "SSO", kind: pg.SSOSecret, activeSQL: ssoSecretSQL, batchSQL: rekeySSOSecretSQL, updateSQL: resealSSOSecretSQL,
		aad: pg.AADSSO, seal: func(k *pg.Keyring, _, _ int64, plaintext string) (pg.SealedSecret, error) {
			return k.SealSSO(plaintext)
		},
		logFailed: (*pg.Secrets).LogUndecryptableSSO, count: func(r *Rekeyed) *int64 { return &r.SSO }, tenantless: true},
}

// activeSecretsAllSQL reads every tenant's active provider secrets, for the
// start-up check.
const activeSecretsAllSQL = `
SELECT tenant_id, provider_id, id, key_id, aad_version, ciphertext FROM provider_secrets
WHERE retired_at IS NULL
ORDER BY tenant_id, id`

// activeDestinationSecretsAllSQL reads every tenant's destination secrets
// that still sign: the current ones and those in their grace.
const activeDestinationSecretsAllSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE expires_at IS NULL OR expires_at > now()
ORDER BY tenant_id, id`

// apiCredentialsAllSQL reads the secret of every tenant's provider API
// credentials, one per provider, whose id stands for the secret's.
const apiCredentialsAllSQL = `
SELECT tenant_id, provider_id, provider_id, key_id, aad_version, ciphertext FROM provider_api_credentials
ORDER BY tenant_id, provider_id`

// natsCredentialsAllSQL reads the credentials of every tenant's NATS
// destinations, one row per destination, whose id stands for the secret's.
const natsCredentialsAllSQL = `
SELECT tenant_id, destination_id, destination_id, key_id, aad_version, ciphertext FROM destination_nats_credentials
ORDER BY tenant_id, destination_id`

// CheckSecrets tries every active provider and destination secret, and the
// secret of every provider's API credentials, with the
// store's keys, as serve does before it starts. It returns pg.ErrNoKey on a
// store without keys, and an error naming each key id that active secrets
// are stored under but no key of the store has, with how many secrets and
// providers or destinations use it. Secrets that fail under a key the store
// has are logged and skipped, as at ingest: they stop nothing else.
func (s *Rekeyer) CheckSecrets(ctx context.Context) error {
	if !s.keys.CanSeal() {
		return pg.ErrNoKey
	}
	missing := map[string][]string{} // key id to its uses, one per table
	for _, tb := range tables {
		uses, err := s.missingKeys(ctx, tb)
		if err != nil {
			return err
		}
		for id, u := range uses {
			missing[id] = append(missing[id], fmt.Sprintf(tb.kind.Uses, u.secrets, len(u.owners)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for id, uses := range missing {
		parts = append(parts, fmt.Sprintf("key id %s (%s)", id, strings.Join(uses, ", ")))
	}
	sort.Strings(parts)
	return fmt.Errorf("secrets are stored under keys that TIDEMARK_ENCRYPTION_KEY does not hold: %s; "+
		"it holds key id %s. Set it to the key those secrets were stored with (several keys comma-separated, "+
		"the one that seals new secrets first)", strings.Join(parts, ", "), strings.Join(s.keys.IDs(), ", "))
}

// keyUse counts what a missing key would open.
type keyUse struct {
	secrets int
	owners  map[int64]bool // keyed by provider or destination id; ids are unique across tenants
}

// missingKeys opens the active secrets of tb and returns, by key id, those
// under keys the store lacks; it logs the others that fail.
func (s *Rekeyer) missingKeys(ctx context.Context, tb table) (map[string]*keyUse, error) {
	rows, err := s.pool.Query(ctx, tb.activeSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	secrets, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil {
		return nil, pg.Translate(err)
	}
	missing := map[string]*keyUse{}
	for _, sec := range secrets {
		_, err := s.keys.Open(sec)
		switch {
		case errors.Is(err, pg.ErrMissingKey):
			u := missing[sec.KeyID]
			if u == nil {
				u = &keyUse{owners: map[int64]bool{}}
				missing[sec.KeyID] = u
			}
			u.secrets++
			u.owners[sec.ProviderID] = true
		case err != nil:
			tb.logFailed(s.secrets, sec, err)
		}
	}
	return missing, nil
}

// rekeyBatchSQL locks the next batch of provider secrets, retired ones
// included, of tenant @tenant_id that are not sealed under @key_id bound
// to their provider. A rekey goes tenant by tenant, so that on Citus each
// batch is locked on the tenant's worker (it locks no rows across shards).
const rekeyBatchSQL = `
SELECT tenant_id, provider_id, id, key_id, aad_version, ciphertext FROM provider_secrets
WHERE tenant_id = @tenant_id AND id > @after_id AND (key_id <> @key_id OR aad_version <> @aad_version)
ORDER BY id
LIMIT @limit
FOR UPDATE`

// rekeySecretsSQL stores a batch of re-sealed provider secrets.
const rekeySecretsSQL = `
UPDATE provider_secrets ps SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @owner_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[])
     AS u(tenant_id, provider_id, id, ciphertext)
WHERE ps.tenant_id = @tenant_id AND u.tenant_id = @tenant_id AND ps.provider_id = u.provider_id AND ps.id = u.id`

// rekeyDestinationBatchSQL locks the next batch of destination secrets not
// sealed under @key_id bound to their destination. Expired ones are left
// out: they never sign again, and the next rotation deletes them.
const rekeyDestinationBatchSQL = `
SELECT tenant_id, destination_id, id, key_id, aad_version, ciphertext FROM destination_secrets
WHERE tenant_id = @tenant_id AND id > @after_id AND (key_id <> @key_id OR aad_version <> @aad_version)
  AND (expires_at IS NULL OR expires_at > now())
ORDER BY id
LIMIT @limit
FOR UPDATE`

// rekeyDestinationSecretsSQL stores a batch of re-sealed destination secrets.
const rekeyDestinationSecretsSQL = `
UPDATE destination_secrets ds SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @owner_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[])
     AS u(tenant_id, destination_id, id, ciphertext)
WHERE ds.tenant_id = @tenant_id AND u.tenant_id = @tenant_id AND ds.destination_id = u.destination_id AND ds.id = u.id`

// rekeyAPIBatchSQL locks the next batch of provider API credentials not
// sealed under @key_id bound to their provider, in the order of
// apiCredentialsAllSQL (the provider id stands for the secret's id).
const rekeyAPIBatchSQL = `
SELECT tenant_id, provider_id, provider_id, key_id, aad_version, ciphertext FROM provider_api_credentials
WHERE tenant_id = @tenant_id AND provider_id > @after_id AND (key_id <> @key_id OR aad_version <> @aad_version)
ORDER BY provider_id
LIMIT @limit
FOR UPDATE`

// rekeyAPISecretsSQL stores a batch of re-sealed provider API secrets.
const rekeyAPISecretsSQL = `
UPDATE provider_api_credentials c SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @owner_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[])
     AS u(tenant_id, provider_id, id, ciphertext)
WHERE c.tenant_id = @tenant_id AND u.tenant_id = @tenant_id AND c.provider_id = u.provider_id`

// rekeyNATSBatchSQL locks the next batch of NATS destinations' credentials
// not sealed under @key_id bound to their destination, in the order of
// natsCredentialsAllSQL.
const rekeyNATSBatchSQL = `
SELECT tenant_id, destination_id, destination_id, key_id, aad_version, ciphertext FROM destination_nats_credentials
WHERE tenant_id = @tenant_id AND destination_id > @after_id AND (key_id <> @key_id OR aad_version <> @aad_version)
ORDER BY destination_id
LIMIT @limit
FOR UPDATE`

// rekeyNATSSecretsSQL stores a batch of re-sealed NATS credentials.
const rekeyNATSSecretsSQL = `
UPDATE destination_nats_credentials c SET key_id = @key_id, aad_version = @aad_version, ciphertext = u.ciphertext
FROM unnest(@tenant_ids::bigint[], @owner_ids::bigint[], @ids::bigint[], @ciphertexts::bytea[])
     AS u(tenant_id, destination_id, id, ciphertext)
WHERE c.tenant_id = @tenant_id AND u.tenant_id = @tenant_id AND c.destination_id = u.destination_id`

// Rekeyed counts the secrets a rekey changed.
type Rekeyed struct {
	Providers, Destinations int64
	APICredentials          int64 // the secrets of providers' API credentials
	NATSCredentials         int64 // those of NATS destinations
	IDHashKey               int64 // the database's id hash key (0 or 1), sealed again, never changed
	Apps                    int64 // apps' client secrets
	AppInstalls             int64 // the tokens of app installs
	SSO                     int64 // the SSO client secret (0 or 1)
}

// RekeySecrets re-encrypts every provider secret (retired ones included),
// every destination secret that still signs and the secret of every
// provider's API credentials, that is not yet sealed under the store's
// first key and bound to its tenant and provider or destination, batchSize
// (at least 1) secrets per transaction, and returns
// how many it changed. A secret it cannot decrypt is left as it is and
// logged; once the rest is done, such secrets make it return an error
// saying how many there are and, for a missing key, its id. Without keys it
// returns pg.ErrNoKey.
func (s *Rekeyer) RekeySecrets(ctx context.Context, batchSize int) (Rekeyed, error) {
	var done Rekeyed
	if !s.keys.CanSeal() {
		return done, pg.ErrNoKey
	}
	var left []string
	for _, tb := range tables {
		r := s.rekeyTable(ctx, tb, max(batchSize, 1))
		*tb.count(&done) = r.changed
		if r.err != nil {
			return done, r.err
		}
		if msg := r.leftAsTheyWere(); msg != "" {
			left = append(left, msg)
		}
	}
	if len(left) > 0 {
		return done, errors.New(strings.Join(left, ". "))
	}
	return done, nil
}

// tableRekey is how a rekey of one table went.
type tableRekey struct {
	owner   string
	changed int64
	failed  int64          // failed to decrypt under a key the store has
	missing map[string]int // key id the store lacks to its secrets
	err     error          // stopped the rekey of this table
}

// rekeyTenantsSQL lists the tenants a rekey goes through, in order.
const rekeyTenantsSQL = `SELECT id FROM tenants ORDER BY id`

// rekeyTable re-seals the secrets of tb tenant by tenant, batch by batch.
func (s *Rekeyer) rekeyTable(ctx context.Context, tb table, batchSize int) tableRekey {
	r := tableRekey{owner: tb.owner, missing: map[string]int{}}
	rows, err := s.pool.Query(ctx, rekeyTenantsSQL)
	if err != nil {
		r.err = pg.Translate(err)
		return r
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		r.err = pg.Translate(err)
		return r
	}
	if tb.tenantless {
		tenants = []int64{0} // its statements take no tenant
	}
	for _, tenant := range tenants {
		if r.err = s.rekeyTenant(ctx, tb, tenant, batchSize, &r); r.err != nil {
			return r
		}
	}
	return r
}

// rekeyTenant re-seals the secrets of tb of one tenant, batch by batch,
// each batch in a transaction of its own.
func (s *Rekeyer) rekeyTenant(ctx context.Context, tb table, tenant int64, batchSize int, r *tableRekey) error {
	var afterID int64
	for {
		var n int
		var batchChanged int64
		err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, tb.batchSQL, pgx.NamedArgs{"tenant_id": tenant, "after_id": afterID,
				"key_id": s.keys.SealerID(), "aad_version": tb.aad, "limit": batchSize})
			if err != nil {
				return pg.Translate(err)
			}
			batch, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
			if err != nil || len(batch) == 0 {
				return pg.Translate(err)
			}
			n = len(batch)
			afterID = batch[n-1].ID
			var tenantIDs, ownerIDs, ids []int64
			var ciphertexts [][]byte
			for _, sec := range batch {
				plain, err := s.keys.Open(sec)
				if errors.Is(err, pg.ErrMissingKey) {
					r.missing[sec.KeyID]++
					continue
				}
				if err != nil {
					tb.logFailed(s.secrets, sec, err)
					r.failed++
					continue
				}
				sealed, err := tb.seal(s.keys, sec.TenantID, sec.ProviderID, plain)
				if err != nil {
					return err
				}
				tenantIDs, ownerIDs, ids = append(tenantIDs, sec.TenantID), append(ownerIDs, sec.ProviderID), append(ids, sec.ID)
				ciphertexts = append(ciphertexts, sealed.Ciphertext)
			}
			tag, err := tx.Exec(ctx, tb.updateSQL, pgx.NamedArgs{"tenant_id": tenant, "key_id": s.keys.SealerID(), "aad_version": tb.aad,
				"tenant_ids": tenantIDs, "owner_ids": ownerIDs, "ids": ids, "ciphertexts": ciphertexts})
			batchChanged = tag.RowsAffected()
			if err != nil || !tb.endpoints || batchChanged == 0 {
				return pg.Translate(err)
			}
			return pg.NotifyEndpoints(ctx, tx, tenant)
		})
		if err != nil {
			return err
		}
		r.changed += batchChanged
		if n < batchSize {
			return nil
		}
	}
}

// leftAsTheyWere says which secrets the rekey could not open, or "".
func (r tableRekey) leftAsTheyWere() string {
	if len(r.missing) == 0 && r.failed == 0 {
		return ""
	}
	var parts []string
	for id, count := range r.missing {
		parts = append(parts, fmt.Sprintf("%d under key id %s, which TIDEMARK_ENCRYPTION_KEY does not hold", count, id))
	}
	sort.Strings(parts)
	if r.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d that failed to decrypt (logged with their ids)", r.failed))
	}
	return fmt.Sprintf("some %s secrets were left as they were: %s", r.owner, strings.Join(parts, "; "))
}
