package destinations

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// A tenant's destinations are counted under a transaction-level advisory
// lock of the tenant, so that creations at once cannot both take the last
// place (migration 00050: tenants.max_destinations).
const (
	lockDestinationCountSQL = `SELECT pg_advisory_xact_lock(hashtextextended('tidemark destinations of tenant', @tenant_id::bigint))`
	destinationCountSQL     = `
SELECT t.slug, t.max_destinations, (SELECT count(*) FROM destinations d WHERE d.tenant_id = @tenant_id)
FROM tenants t WHERE t.id = @tenant_id`
)

// checkLimit refuses a new destination of a tenant that has as many as it
// may, saying how to make room.
func checkLimit(ctx context.Context, tx pgx.Tx, tenantID int64) error {
	args := pgx.NamedArgs{"tenant_id": tenantID}
	if _, err := tx.Exec(ctx, lockDestinationCountSQL, args); err != nil {
		return err
	}
	var slug string
	var limit, n int
	if err := tx.QueryRow(ctx, destinationCountSQL, args).Scan(&slug, &limit, &n); err != nil {
		return err
	}
	if n >= limit {
		return domain.Errorf(domain.EINVALID, "this workspace has %d destinations, as many as it may have: delete one first, "+
			"or ask an admin to raise the limit (tidemark tenant update %s --max-destinations N)", n, slug)
	}
	return nil
}
