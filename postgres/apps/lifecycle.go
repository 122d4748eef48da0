package apps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// An app's lifecycle beyond its installs by hand and by OAuth: HubSpot's
// uninstall, the install behind a tenant's provider (the conflict page's
// snapshot), and the audit of what the journal's management changed.

var _ domain.AppJournalService = (*Registry)(nil)

// uninstallSQL removes the install (its tokens are in its row) unless it
// was made after the uninstall: a retried, older uninstall keeps a new
// install.
const uninstallSQL = `
DELETE FROM app_installs WHERE app_id = @app_id AND portal_id = @portal_id AND created_at <= @at
RETURNING id`

// UninstallPortal implements domain.AppRouting. The app's row is locked,
// as for every change of its installs.
func (s *Registry) UninstallPortal(ctx context.Context, appID, portalID int64, at time.Time) (domain.AppInstall, error) {
	var in domain.AppInstall
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, lockAppByIDSQL, pgx.NamedArgs{"id": appID})
		if err != nil {
			return err
		}
		if _, err := pgx.CollectExactlyOneRow(rows, scanApp); errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("app %d not found", appID)
		} else if err != nil {
			return err
		}
		if in, err = installed(ctx, tx, appID, portalID); err != nil {
			return err
		}
		var id int64
		err = tx.QueryRow(ctx, uninstallSQL, pgx.NamedArgs{"app_id": appID, "portal_id": portalID, "at": at}).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return pg.NotFound("portal %d was installed again after the uninstall of %s", portalID, at.UTC().Format(time.RFC3339))
		}
		if err != nil {
			return err
		}
		return pg.Audit(ctx, tx, in.TenantID, domain.AuditAppDisconnect, installTarget(in),
			disconnected("uninstalled at HubSpot: the portal's mapping removed", in))
	})
	return in, pg.Translate(err)
}

// providerInstallSQL reads the install behind a tenant's provider, the
// one with tokens first when several apps' portals go there.
const providerInstallSQL = `SELECT ` + installColumns + `, p.name` + installsFrom + `
JOIN providers p ON p.tenant_id = i.tenant_id AND p.id = i.provider_id
WHERE i.tenant_id = @tenant_id AND p.tenant_id = @tenant_id AND p.name = @name
ORDER BY i.tokens_ciphertext IS NULL, a.name
LIMIT 1`

const appByIDSQL = `SELECT ` + appColumns + ` FROM apps WHERE id = @id`

// ProviderInstall implements domain.AppJournalService.
func (s *Registry) ProviderInstall(ctx context.Context, tenantID int64, providerName string) (domain.App, domain.AppInstall, error) {
	var in domain.AppInstall
	err := s.read.QueryRow(ctx, providerInstallSQL, pgx.NamedArgs{"tenant_id": tenantID, "name": providerName}).Scan(
		&in.ID, &in.AppID, &in.AppName, &in.PortalID, &in.TenantID, &in.TenantSlug, &in.ProviderID,
		&in.HasTokens, &in.Status, &in.CreatedAt, &in.ProviderName)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.App{}, in, pg.NotFound("provider %s receives no portal of an app", providerName)
	}
	if err != nil {
		return domain.App{}, in, pg.Translate(err)
	}
	rows, err := s.read.Query(ctx, appByIDSQL, pgx.NamedArgs{"id": in.AppID})
	if err != nil {
		return domain.App{}, in, pg.Translate(err)
	}
	app, err := pgx.CollectExactlyOneRow(rows, scanApp)
	if errors.Is(err, pgx.ErrNoRows) {
		return app, in, pg.NotFound("app %d not found", in.AppID)
	}
	return app, in, pg.Translate(err)
}

// RecordSnapshotRequested implements domain.AppJournalService. The
// record's id is hashed in the target, as a conflict's resolution names it.
func (s *Registry) RecordSnapshotRequested(ctx context.Context, tenantID int64, c domain.Conflict, statusID string) error {
	h, err := pg.NewIDHashes(s.pool, s.keys).Hasher(ctx)
	if err != nil {
		return err
	}
	target := fmt.Sprintf("conflict %d (%s %s %s, revision %d)", c.ID, c.Provider, c.ObjectType, h.HashedID(c.ObjectID), c.Revision)
	return pg.Translate(pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		return pg.Audit(ctx, tx, tenantID, domain.AuditConflictSnapshotRequested, target,
			"asked HubSpot for a snapshot of the record; status id "+statusID)
	}))
}

// RecordAppSubscriptions implements domain.AppJournalService.
func (s *Registry) RecordAppSubscriptions(ctx context.Context, appName, summary string) error {
	return pg.Translate(pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		return pg.Audit(ctx, tx, 0, domain.AuditAppSubscriptions, appName, summary)
	}))
}
