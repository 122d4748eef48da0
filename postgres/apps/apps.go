// Package apps stores apps (a provider's public app, global: an admin's)
// with their sealed client secrets, and their installs, each mapping one
// portal to a tenant's provider (domain.AppService). On Citus its tables
// are reference tables, so that a portal's install is found without its
// tenant. Every change is audited: apps outside any tenant, installs in
// their tenant's log.
package apps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Registry is the storage of apps and their installs.
type Registry struct {
	pool    *pgxpool.Pool
	read    *pgxpool.Pool
	keys    *pg.Keyring
	secrets *pg.Secrets // logs the secrets it cannot open
}

// New returns the apps of pools, whose secrets keys seal.
func New(pools pg.Pools, keys *pg.Keyring, secrets *pg.Secrets) *Registry {
	return &Registry{pool: pools.Write, read: pools.ForReads(), keys: keys, secrets: secrets}
}

var _ domain.AppService = (*Registry)(nil)

const appColumns = `id, kind, name, provider_app_id, client_id, scopes, authorize_url, api_base_url, allow_private,
       created_at, rotated_at`

func scanApp(row pgx.CollectableRow) (domain.App, error) {
	var a domain.App
	var rotated *time.Time
	err := row.Scan(&a.ID, &a.Kind, &a.Name, &a.ProviderAppID, &a.ClientID, &a.Scopes, &a.AuthorizeURL, &a.APIBaseURL,
		&a.AllowPrivate, &a.CreatedAt, &rotated)
	if rotated != nil {
		a.RotatedAt = *rotated
	}
	return a, err
}

const insertAppSQL = `
INSERT INTO apps (kind, name, provider_app_id, client_id, scopes, authorize_url, api_base_url, allow_private)
VALUES (@kind, @name, @provider_app_id, @client_id, coalesce(@scopes::text[], '{}'), @authorize_url, @api_base_url, @allow_private)
RETURNING ` + appColumns

const insertSecretSQL = `
INSERT INTO app_secrets (app_id, key_id, aad_version, ciphertext)
VALUES (@app_id, @key_id, @aad_version, @ciphertext)`

// CreateApp implements domain.AppService. Under a key that none of the
// secrets in use are stored under it refuses, as every sealing does
// (pg.CheckSealingKey), unless ctx allows a new key.
func (s *Registry) CreateApp(ctx context.Context, na domain.NewApp) (domain.App, error) {
	var app domain.App
	na, err := na.Check()
	if err != nil {
		return app, err
	}
	if !s.keys.CanSeal() {
		return app, pg.ErrNoKey
	}
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		if err := pg.CheckSealingKey(ctx, tx, s.keys); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, insertAppSQL, pgx.NamedArgs{"kind": na.Kind, "name": na.Name, "provider_app_id": na.ProviderAppID,
			"client_id": na.ClientID, "scopes": na.Scopes, "authorize_url": na.AuthorizeURL, "api_base_url": na.APIBaseURL,
			"allow_private": na.AllowPrivate})
		if err != nil {
			return err
		}
		if app, err = pgx.CollectExactlyOneRow(rows, scanApp); pg.UniqueViolation(err) {
			return domain.Errorf(domain.ECONFLICT, "an app named %q exists already", na.Name)
		} else if err != nil {
			return err
		}
		if err := s.insertSecret(ctx, tx, app.ID, na.ClientSecret); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditAppCreate, app.Name, appSummary(app))
	})
	return app, pg.Translate(err)
}

// appSummary describes an app for the audit log, without its secret.
func appSummary(a domain.App) string {
	summary := fmt.Sprintf("%s app %d, client id %s, scopes %q, authorize URL %s, API base URL %s",
		a.Kind, a.ProviderAppID, a.ClientID, strings.Join(a.Scopes, " "), a.AuthorizeURL, a.APIBaseURL)
	if a.AllowPrivate {
		summary += ", private addresses allowed"
	}
	return summary
}

// insertSecret seals plaintext for app id and stores it as its current
// secret.
func (s *Registry) insertSecret(ctx context.Context, tx pgx.Tx, appID int64, plaintext string) error {
	sealed, err := s.keys.SealApp(appID, plaintext)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertSecretSQL, pgx.NamedArgs{"app_id": appID,
		"key_id": sealed.KeyID, "aad_version": sealed.AADVersion, "ciphertext": sealed.Ciphertext})
	return err
}

const listAppsSQL = `SELECT ` + appColumns + ` FROM apps ORDER BY name`

// Apps implements domain.AppService.
func (s *Registry) Apps(ctx context.Context) ([]domain.App, error) {
	rows, err := s.read.Query(ctx, listAppsSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	apps, err := pgx.CollectRows(rows, scanApp)
	return apps, pg.Translate(err)
}

const appByNameSQL = `SELECT ` + appColumns + ` FROM apps WHERE name = @name`

// App implements domain.AppService.
func (s *Registry) App(ctx context.Context, name string) (domain.App, error) {
	return appByName(ctx, s.read, name, appByNameSQL)
}

// withTx runs fn in a transaction of the write pool whose statements on
// distributed tables run sequentially (pg.WithSequentialTx): Citus refuses
// to change a reference table (apps, app_installs) after a parallel read
// of distributed tables, such as pg.CheckSealingKey's counts or the
// providers of several tenants' installs.
func (s *Registry) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pg.WithSequentialTx(ctx, s.pool, fn)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// appByName reads the app named name with sql (appByNameSQL, or
// lockAppSQL in a transaction); ENOTFOUND when there is none.
func appByName(ctx context.Context, q querier, name, sql string) (domain.App, error) {
	rows, err := q.Query(ctx, sql, pgx.NamedArgs{"name": name})
	if err != nil {
		return domain.App{}, pg.Translate(err)
	}
	app, err := pgx.CollectExactlyOneRow(rows, scanApp)
	if errors.Is(err, pgx.ErrNoRows) {
		return app, pg.NotFound("app %q not found", name)
	}
	return app, pg.Translate(err)
}

// lockAppSQL serialises the changes of one app: its rotations, its
// installs and its deletion.
const lockAppSQL = `SELECT ` + appColumns + ` FROM apps WHERE name = @name FOR UPDATE`

// dropRotatedSecretsSQL removes the secrets rotated out before, expired or
// not: after a rotation only the new secret and the one it replaces verify.
const dropRotatedSecretsSQL = `DELETE FROM app_secrets WHERE app_id = @app_id AND expires_at IS NOT NULL`

const expireCurrentSecretSQL = `
UPDATE app_secrets SET expires_at = now() + make_interval(secs => @grace::float8)
WHERE app_id = @app_id AND expires_at IS NULL`

const markRotatedSQL = `UPDATE apps SET rotated_at = now() WHERE id = @app_id RETURNING ` + appColumns

// RotateAppSecret implements domain.AppService. A second rotation within
// the grace ends the oldest secret at once, as a destination's does.
func (s *Registry) RotateAppSecret(ctx context.Context, name, secret string) (domain.App, error) {
	var app domain.App
	if err := domain.CheckAppSecret(secret); err != nil {
		return app, err
	}
	if !s.keys.CanSeal() {
		return app, pg.ErrNoKey
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		locked, err := appByName(ctx, tx, name, lockAppSQL)
		if err != nil {
			return err
		}
		if err := pg.CheckSealingKey(ctx, tx, s.keys); err != nil {
			return err
		}
		args := pgx.NamedArgs{"app_id": locked.ID, "grace": domain.AppSecretGrace.Seconds()}
		for _, sql := range []string{dropRotatedSecretsSQL, expireCurrentSecretSQL} {
			if _, err := tx.Exec(ctx, sql, args); err != nil {
				return err
			}
		}
		if err := s.insertSecret(ctx, tx, locked.ID, secret); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, markRotatedSQL, args)
		if err != nil {
			return err
		}
		if app, err = pgx.CollectExactlyOneRow(rows, scanApp); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditAppRotate, app.Name,
			"rotated the client secret; the previous one verifies for "+domain.FormatDuration(domain.AppSecretGrace)+" more")
	})
	return app, pg.Translate(err)
}

const deleteAppSQL = `DELETE FROM apps WHERE id = @app_id`

// DeleteApp implements domain.AppService. Each install it removes is
// audited in its tenant's log too.
func (s *Registry) DeleteApp(ctx context.Context, name string) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		app, err := appByName(ctx, tx, name, lockAppSQL)
		if err != nil {
			return err
		}
		installs, err := s.installs(ctx, tx, app)
		if err != nil {
			return err
		}
		for _, in := range installs {
			if err := pg.Audit(ctx, tx, in.TenantID, domain.AuditAppDisconnect, installTarget(in),
				"app deleted; the portal's mapping and tokens removed"); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, deleteAppSQL, pgx.NamedArgs{"app_id": app.ID}); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditAppDelete, app.Name,
			fmt.Sprintf("deleted with its secrets and %d installs", len(installs)))
	})
}

const appSecretsSQL = `
SELECT 0::bigint, app_id, id, key_id, aad_version, ciphertext FROM app_secrets
WHERE app_id = @app_id AND (expires_at IS NULL OR expires_at > now())
ORDER BY id DESC`

// AppSecrets implements domain.AppService. A secret that does not open (a
// key the store lacks) is logged and skipped, as a provider's is, so that
// the others still verify; none opening is an error.
func (s *Registry) AppSecrets(ctx context.Context, appID int64) ([]string, error) {
	if !s.keys.CanSeal() {
		return nil, pg.ErrNoKey
	}
	rows, err := s.pool.Query(ctx, appSecretsSQL, pgx.NamedArgs{"app_id": appID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	sealed, err := pgx.CollectRows(rows, pg.ScanSealedSecret)
	if err != nil {
		return nil, pg.Translate(err)
	}
	var out []string
	var failed error
	for _, sec := range sealed {
		plain, err := s.keys.Open(sec)
		if err != nil {
			s.secrets.LogUndecryptableApp(sec, err)
			failed = err
			continue
		}
		out = append(out, plain)
	}
	if len(out) == 0 && failed != nil {
		return nil, fmt.Errorf("app %d: no client secret opens: %w", appID, failed)
	}
	if len(out) == 0 {
		return nil, pg.NotFound("app %d has no client secret", appID)
	}
	return out, nil
}
