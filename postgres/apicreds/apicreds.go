// Package apicreds keeps providers' API credentials, from which backfill
// pulls what webhooks missed (pull.CredentialStore): one row per provider,
// its secret sealed with the store's keyring as signing secrets are
// (secretkeys checks and rekeys it with them), the rest in plain columns.
// Setting and clearing are audited with the non-secret fields only.
package apicreds

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Credentials implements pull.CredentialStore on pool; the console's reads
// of what may be shown use the read pool.
type Credentials struct {
	pool    *pgxpool.Pool
	read    *pgxpool.Pool
	secrets *pg.Secrets // seals and opens with the keyring; logs what it cannot open
}

// New returns the API credentials of pools, sealed and opened by secrets.
func New(pools pg.Pools, secrets *pg.Secrets) *Credentials {
	return &Credentials{pool: pools.Write, read: pools.ForReads(), secrets: secrets}
}

var _ pull.CredentialStore = (*Credentials)(nil)

// The secret column says which of the two secrets the row holds.
const (
	secretToken  = "token"
	secretClient = "client_secret"
)

const upsertCredentialsSQL = `
INSERT INTO provider_api_credentials AS c (tenant_id, provider_id, secret, key_id, aad_version, ciphertext,
    client_id, login_url, api_version, base_url, allow_private, budget_share, set_by, set_at)
VALUES (@tenant_id, @provider_id, @secret, @key_id, @aad_version, @ciphertext,
    @client_id, @login_url, @api_version, @base_url, @allow_private, @budget_share, @set_by, now())
ON CONFLICT (tenant_id, provider_id) DO UPDATE SET
    secret = excluded.secret, key_id = excluded.key_id, aad_version = excluded.aad_version,
    ciphertext = excluded.ciphertext, client_id = excluded.client_id, login_url = excluded.login_url,
    api_version = excluded.api_version, base_url = excluded.base_url, allow_private = excluded.allow_private,
    budget_share = excluded.budget_share, set_at = excluded.set_at, set_by = excluded.set_by`

// SetAPICredentials implements pull.CredentialStore. Without keys it
// returns pg.ErrNoKey and stores nothing; under a key that none of the
// active signing secrets use, ECONFLICT as they do, unless ctx allows a
// new key (postgres.AllowNewKey).
func (c *Credentials) SetAPICredentials(ctx context.Context, tenantID, providerID int64, cr pull.Credentials) error {
	kind, plaintext := secretToken, cr.Token
	switch {
	case cr.Token != "" && cr.ClientSecret != "":
		return domain.Errorf(domain.EINVALID, "API credentials hold an access token or a client secret, not both")
	case cr.ClientSecret != "":
		kind, plaintext = secretClient, cr.ClientSecret
	case cr.Token == "":
		return domain.Errorf(domain.EINVALID, "API credentials need an access token or a client secret")
	}
	if cr.BudgetShare == 0 {
		cr.BudgetShare = pull.DefaultBudgetShare
	}
	actor, _ := domain.ActorFrom(ctx) // pg.Audit refuses a change without one
	sealed, err := c.secrets.Keys.SealProviderAPI(tenantID, providerID, plaintext)
	if err != nil {
		return err
	}
	return pg.WithTx(ctx, c.pool, func(tx pgx.Tx) error {
		name, err := pg.LockProvider(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		if err := pg.CheckSealingKey(ctx, tx, c.secrets.Keys); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, upsertCredentialsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID,
			"secret": kind, "key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext,
			"client_id": cr.ClientID, "login_url": cr.LoginURL, "api_version": cr.APIVersion, "base_url": cr.BaseURL,
			"allow_private": cr.AllowPrivate, "budget_share": cr.BudgetShare, "set_by": actor.Name})
		if err != nil {
			return pg.Translate(err)
		}
		return pg.Audit(ctx, tx, tenantID, pull.AuditCredentialsSet, name, cr.Summary())
	})
}

const deleteCredentialsSQL = `
DELETE FROM provider_api_credentials WHERE tenant_id = @tenant_id AND provider_id = @provider_id
RETURNING secret, client_id`

// ClearAPICredentials implements pull.CredentialStore.
func (c *Credentials) ClearAPICredentials(ctx context.Context, tenantID, providerID int64) error {
	return pg.WithTx(ctx, c.pool, func(tx pgx.Tx) error {
		name, err := pg.LockProvider(ctx, tx, tenantID, providerID)
		if err != nil {
			return err
		}
		var kind, clientID string
		err = tx.QueryRow(ctx, deleteCredentialsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).
			Scan(&kind, &clientID)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("provider %s has no API credentials to clear", name)
		}
		if err != nil {
			return pg.Translate(err)
		}
		summary := "cleared the " + pull.SecretToken
		if kind == secretClient {
			summary = fmt.Sprintf("cleared client id %s and its %s", clientID, pull.SecretClient)
		}
		return pg.Audit(ctx, tx, tenantID, pull.AuditCredentialsClear, name, summary)
	})
}

const credentialsSQL = `
SELECT secret, key_id, aad_version, ciphertext, client_id, login_url, api_version, base_url, allow_private,
       budget_share, set_at, set_by
FROM provider_api_credentials WHERE tenant_id = @tenant_id AND provider_id = @provider_id`

// row is a stored row with its secret still sealed.
type row struct {
	info   pull.Info
	kind   string
	sealed pg.SealedSecret
}

func (c *Credentials) load(ctx context.Context, q *pgxpool.Pool, tenantID, providerID int64) (row, bool, error) {
	r := row{sealed: pg.SealedSecret{TenantID: tenantID, ProviderID: providerID, ID: providerID}}
	i := &r.info
	err := q.QueryRow(ctx, credentialsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).Scan(
		&r.kind, &r.sealed.KeyID, &r.sealed.AADVersion, &r.sealed.Ciphertext, &i.ClientID, &i.LoginURL, &i.APIVersion,
		&i.BaseURL, &i.AllowPrivate, &i.BudgetShare, &i.SetAt, &i.SetBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, pg.Translate(err)
	}
	i.Secret = pull.SecretToken
	if r.kind == secretClient {
		i.Secret = pull.SecretClient
	}
	return r, true, nil
}

// APICredentials implements pull.CredentialStore. Without keys it returns
// pg.ErrNoKey.
func (c *Credentials) APICredentials(ctx context.Context, tenantID, providerID int64) (pull.Credentials, bool, error) {
	r, ok, err := c.load(ctx, c.pool, tenantID, providerID)
	if !ok || err != nil {
		return pull.Credentials{}, false, err
	}
	plain, err := c.secrets.Keys.Open(r.sealed)
	if errors.Is(err, pg.ErrNoKey) {
		return pull.Credentials{}, false, err
	}
	if err != nil {
		c.secrets.LogUndecryptableProviderAPI(r.sealed, err)
		return pull.Credentials{}, false, fmt.Errorf("the API credentials of provider %d cannot be decrypted: %w", providerID, err)
	}
	i := r.info
	cr := pull.Credentials{ClientID: i.ClientID, LoginURL: i.LoginURL, APIVersion: i.APIVersion, BaseURL: i.BaseURL,
		AllowPrivate: i.AllowPrivate, BudgetShare: i.BudgetShare}
	if r.kind == secretClient {
		cr.ClientSecret = plain
	} else {
		cr.Token = plain
	}
	return cr, true, nil
}

// APICredentialsInfo implements pull.CredentialStore; it needs no key.
func (c *Credentials) APICredentialsInfo(ctx context.Context, tenantID, providerID int64) (pull.Info, bool, error) {
	r, ok, err := c.load(ctx, c.read, tenantID, providerID)
	return r.info, ok, err
}
