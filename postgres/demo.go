package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// backdateProvidersSQL moves the connection time of a tenant's providers
// back, never forward.
const backdateProvidersSQL = `UPDATE providers SET created_at = @at WHERE tenant_id = @tenant_id AND created_at > @at`

// BackdateProviders says the tenant's providers were connected at at: the
// demo seeds a history that starts before the providers were created, and
// a provider must not look connected after its own deliveries (nor be
// spared provider_silent, whose grace runs from the connection).
func (s *Store) BackdateProviders(ctx context.Context, tenantID int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, backdateProvidersSQL, pgx.NamedArgs{"tenant_id": tenantID, "at": at})
	return pg.Translate(err)
}
