package apps

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// An install refers to its tenant but not to its provider (a reference
// table cannot keep a foreign key to a distributed one, migration 00053):
// mapping a portal checks the provider, and every read takes the
// provider's name beside the install, leaving out an install whose
// provider is gone.

const installColumns = `i.id, i.app_id, a.name, i.portal_id, i.tenant_id, t.slug, i.provider_id,
       i.tokens_ciphertext IS NOT NULL, i.status, i.created_at`

const installsFrom = `
FROM app_installs i JOIN apps a ON a.id = i.app_id JOIN tenants t ON t.id = i.tenant_id`

func scanInstall(row pgx.CollectableRow) (domain.AppInstall, error) {
	var in domain.AppInstall
	return in, row.Scan(&in.ID, &in.AppID, &in.AppName, &in.PortalID, &in.TenantID, &in.TenantSlug, &in.ProviderID,
		&in.HasTokens, &in.Status, &in.CreatedAt)
}

const appInstallsSQL = `SELECT ` + installColumns + installsFrom + `
WHERE i.app_id = @app_id
ORDER BY i.portal_id`

const portalInstallSQL = `SELECT ` + installColumns + installsFrom + `
WHERE i.app_id = @app_id AND i.portal_id = @portal_id`

// providerNamesSQL reads the names of the providers of installs, each
// tenant's on its worker under Citus.
const providerNamesSQL = `
SELECT tenant_id, id, name FROM providers
WHERE tenant_id = ANY(@tenant_ids::bigint[]) AND id = ANY(@ids::bigint[])`

// withProviders fills in the installs' provider names and leaves out those
// whose provider is gone.
func withProviders(ctx context.Context, q querier, installs []domain.AppInstall) ([]domain.AppInstall, error) {
	if len(installs) == 0 {
		return installs, nil
	}
	var tenants, ids []int64
	for _, in := range installs {
		tenants, ids = append(tenants, in.TenantID), append(ids, in.ProviderID)
	}
	rows, err := q.Query(ctx, providerNamesSQL, pgx.NamedArgs{"tenant_ids": tenants, "ids": ids})
	if err != nil {
		return nil, err
	}
	type key struct{ tenant, id int64 }
	names := map[key]string{}
	var k key
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&k.tenant, &k.id, &name}, func() error {
		names[k] = name
		return nil
	}); err != nil {
		return nil, err
	}
	out := installs[:0]
	for _, in := range installs {
		if n, ok := names[key{in.TenantID, in.ProviderID}]; ok {
			in.ProviderName = n
			out = append(out, in)
		}
	}
	return out, nil
}

// installs are app's installs, read with q.
func (s *Registry) installs(ctx context.Context, q querier, app domain.App) ([]domain.AppInstall, error) {
	rows, err := q.Query(ctx, appInstallsSQL, pgx.NamedArgs{"app_id": app.ID})
	if err != nil {
		return nil, err
	}
	installs, err := pgx.CollectRows(rows, scanInstall)
	if err != nil {
		return nil, err
	}
	return withProviders(ctx, q, installs)
}

// AppInstalls implements domain.AppService.
func (s *Registry) AppInstalls(ctx context.Context, appName string) ([]domain.AppInstall, error) {
	app, err := s.App(ctx, appName)
	if err != nil {
		return nil, err
	}
	installs, err := s.installs(ctx, s.read, app)
	return installs, pg.Translate(err)
}

// portalInstall is the install of portalID for app appID, read with q,
// with its provider's name; ENOTFOUND when there is none or its provider
// is gone.
func portalInstall(ctx context.Context, q querier, appID, portalID int64) (domain.AppInstall, error) {
	rows, err := q.Query(ctx, portalInstallSQL, pgx.NamedArgs{"app_id": appID, "portal_id": portalID})
	if err != nil {
		return domain.AppInstall{}, err
	}
	in, err := pgx.CollectExactlyOneRow(rows, scanInstall)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, pg.NotFound("portal %d is not installed", portalID)
	}
	if err != nil {
		return in, err
	}
	found, err := withProviders(ctx, q, []domain.AppInstall{in})
	if err != nil {
		return in, err
	}
	if len(found) == 0 {
		return in, pg.NotFound("portal %d is installed for a provider that no longer exists", portalID)
	}
	return found[0], nil
}

// PortalInstall implements domain.AppService: the app endpoint's lookup,
// on the write pool beside ingest.
func (s *Registry) PortalInstall(ctx context.Context, appID, portalID int64) (domain.AppInstall, error) {
	in, err := portalInstall(ctx, s.pool, appID, portalID)
	return in, pg.Translate(err)
}

const providerKindSQL = `SELECT name, kind FROM providers WHERE tenant_id = @tenant_id AND id = @provider_id`

const insertInstallSQL = `
INSERT INTO app_installs (app_id, portal_id, tenant_id, provider_id)
VALUES (@app_id, @portal_id, @tenant_id, @provider_id)`

// ConnectPortal implements domain.AppService. The app's row is locked, so
// that the installs of one app change one at a time.
func (s *Registry) ConnectPortal(ctx context.Context, appName string, portalID, tenantID, providerID int64) (domain.AppInstall, error) {
	var in domain.AppInstall
	if portalID <= 0 {
		return in, domain.Errorf(domain.EINVALID, "the portal id must be a positive number, HubSpot's hub id")
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		app, err := appByName(ctx, tx, appName, lockAppSQL)
		if err != nil {
			return err
		}
		var providerName, kind string
		err = tx.QueryRow(ctx, providerKindSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).Scan(&providerName, &kind)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("provider not found")
		}
		if err != nil {
			return err
		}
		if kind != app.Kind {
			return domain.Errorf(domain.EINVALID, "provider %s is a %s provider; app %s connects %s providers", providerName, kind, app.Name, app.Kind)
		}
		existing, err := portalInstall(ctx, tx, app.ID, portalID)
		switch {
		case err == nil && existing.TenantID == tenantID && existing.ProviderID == providerID:
			in = existing // connected already: nothing to change
			return nil
		case err == nil:
			return domain.Errorf(domain.ECONFLICT, "portal %d of app %s is installed for tenant %s (provider %s); disconnect it first",
				portalID, app.Name, existing.TenantSlug, existing.ProviderName)
		case domain.ErrorCode(err) != domain.ENOTFOUND:
			return err
		}
		_, err = tx.Exec(ctx, insertInstallSQL, pgx.NamedArgs{"app_id": app.ID, "portal_id": portalID, "tenant_id": tenantID, "provider_id": providerID})
		if pg.UniqueViolation(err) {
			// The portal's install with a provider gone, or another
			// portal's install for this provider.
			return domain.Errorf(domain.ECONFLICT, "portal %d of app %s is installed already, or provider %s receives another portal "+
				"of the app; disconnect that first", portalID, app.Name, providerName)
		}
		if err != nil {
			return err
		}
		if in, err = portalInstall(ctx, tx, app.ID, portalID); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.AuditAppConnect, installTarget(in),
			"portal mapped to provider "+providerName+" by hand, without tokens: webhooks only")
	})
	return in, pg.Translate(err)
}

// installTarget names an install in the audit log.
func installTarget(in domain.AppInstall) string {
	return in.AppName + " portal " + strconv.FormatInt(in.PortalID, 10)
}

const deleteInstallSQL = `DELETE FROM app_installs WHERE app_id = @app_id AND portal_id = @portal_id`

// DisconnectPortal implements domain.AppService.
func (s *Registry) DisconnectPortal(ctx context.Context, appName string, portalID int64) (domain.AppInstall, error) {
	var in domain.AppInstall
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		app, err := appByName(ctx, tx, appName, lockAppSQL)
		if err != nil {
			return err
		}
		if in, err = installed(ctx, tx, app.ID, portalID); domain.ErrorCode(err) == domain.ENOTFOUND {
			return pg.NotFound("portal %d of app %s is not installed", portalID, app.Name)
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteInstallSQL, pgx.NamedArgs{"app_id": app.ID, "portal_id": portalID}); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, in.TenantID, domain.AuditAppDisconnect, installTarget(in), disconnected("portal's mapping removed", in))
	})
	return in, pg.Translate(err)
}

// installed is the install of the portal, with its provider's name unless
// the provider is gone: a disconnect removes the mapping all the same.
func installed(ctx context.Context, tx pgx.Tx, appID, portalID int64) (domain.AppInstall, error) {
	rows, err := tx.Query(ctx, portalInstallSQL, pgx.NamedArgs{"app_id": appID, "portal_id": portalID})
	if err != nil {
		return domain.AppInstall{}, err
	}
	in, err := pgx.CollectExactlyOneRow(rows, scanInstall)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, pg.NotFound("portal %d is not installed", portalID)
	}
	if err != nil {
		return in, err
	}
	found, err := withProviders(ctx, tx, []domain.AppInstall{in})
	if err == nil && len(found) == 1 {
		in = found[0]
	}
	return in, err
}

// disconnected is the audit summary of a disconnect: what went, what stays.
func disconnected(removed string, in domain.AppInstall) string {
	if in.HasTokens {
		removed += ", its tokens too"
	}
	if in.ProviderName != "" {
		removed += fmt.Sprintf("; provider %s kept", in.ProviderName)
	}
	return removed
}
