package ingest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The tenants of a batch of overload counts are found by slug first, then
// the counts are added in a statement without the reference table tenants:
// on Citus an INSERT ... SELECT joining it inserted nothing, and said so
// to nobody (docs/scale.md).
const (
	overloadTenantsSQL = `SELECT id, slug FROM tenants WHERE slug = ANY (@slugs)`
	countOverloadsSQL  = `
INSERT INTO overload_refusals AS o (tenant_id, hour, reason, n)
SELECT c.tenant_id, c.hour, c.reason, c.n
FROM unnest(@tenants::bigint[], @hours::timestamptz[], @reasons::text[], @counts::bigint[]) AS c (tenant_id, hour, reason, n)
ON CONFLICT (tenant_id, hour, reason) DO UPDATE SET n = o.n + EXCLUDED.n`
)

// LogOverloads implements domain.IngestService. The counts must name each
// (tenant, hour, reason) once.
func (w *Writer) LogOverloads(ctx context.Context, counts []domain.OverloadCount) error {
	if len(counts) == 0 {
		return nil
	}
	slugs := make([]string, 0, len(counts))
	for _, c := range counts {
		slugs = append(slugs, c.TenantSlug)
	}
	return pg.Translate(pg.WithTx(ctx, w.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, overloadTenantsSQL, pgx.NamedArgs{"slugs": slugs})
		if err != nil {
			return err
		}
		ids := map[string]int64{}
		var (
			id   int64
			slug string
		)
		if _, err := pgx.ForEachRow(rows, []any{&id, &slug}, func() error { ids[slug] = id; return nil }); err != nil {
			return err
		}
		var tenants, ns []int64
		var hours []time.Time
		var reasons []string
		for _, c := range counts {
			if id, ok := ids[c.TenantSlug]; ok {
				tenants, hours, reasons, ns = append(tenants, id), append(hours, c.Hour), append(reasons, c.Reason), append(ns, c.N)
			}
		}
		if len(tenants) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, countOverloadsSQL, pgx.NamedArgs{"tenants": tenants, "hours": hours, "reasons": reasons, "counts": ns})
		return err
	}))
}
