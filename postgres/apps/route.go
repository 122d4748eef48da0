package apps

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

var _ domain.AppRouting = (*Registry)(nil)

// portalRoutesSQL reads the installs of a batch's portals with their
// providers' names in one statement: under Citus the reference tables
// join each tenant's providers on its worker. An install whose provider
// is gone joins nothing and is left out, as is an archived tenant's:
// its portals' events are unrouted.
const portalRoutesSQL = `SELECT ` + installColumns + `, p.name` + installsFrom + `
JOIN providers p ON p.tenant_id = i.tenant_id AND p.id = i.provider_id
WHERE i.app_id = @app_id AND i.portal_id = ANY(@portal_ids::bigint[]) AND t.archived_at IS NULL`

// PortalRoutes implements domain.AppRouting, on the write pool beside
// ingest: an install made a moment ago routes the next batch.
func (s *Registry) PortalRoutes(ctx context.Context, appID int64, portalIDs []int64) (map[int64]domain.AppInstall, error) {
	routes := map[int64]domain.AppInstall{}
	if len(portalIDs) == 0 {
		return routes, nil
	}
	rows, err := s.pool.Query(ctx, portalRoutesSQL, pgx.NamedArgs{"app_id": appID, "portal_ids": portalIDs})
	if err != nil {
		return nil, pg.Translate(err)
	}
	var in domain.AppInstall
	_, err = pgx.ForEachRow(rows, []any{&in.ID, &in.AppID, &in.AppName, &in.PortalID, &in.TenantID, &in.TenantSlug, &in.ProviderID,
		&in.HasTokens, &in.Status, &in.CreatedAt, &in.ProviderName}, func() error {
		routes[in.PortalID] = in
		return nil
	})
	return routes, pg.Translate(err)
}
