package apps

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

const tenantInstallsSQL = `SELECT ` + installColumns + installsFrom + `
WHERE i.tenant_id = @tenant_id
ORDER BY a.name, i.portal_id`

// TenantInstalls are the tenant's installs of every app, by app and
// portal, for its Providers pages (an install that needs reconnecting is
// shown there). An install whose provider is gone is left out.
func (s *Registry) TenantInstalls(ctx context.Context, tenantID int64) ([]domain.AppInstall, error) {
	rows, err := s.read.Query(ctx, tenantInstallsSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	installs, err := pgx.CollectRows(rows, scanInstall)
	if err != nil {
		return nil, pg.Translate(err)
	}
	installs, err = withProviders(ctx, s.read, installs)
	return installs, pg.Translate(err)
}
