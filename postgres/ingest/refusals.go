package ingest

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// logRefusedDeliveriesSQL and countRefusalsSQL write a batch of refused
// deliveries, in one transaction: the sampled deliveries, and each
// provider's refusals of an hour added to its DeliveryRejected counter.
// Rows of a provider deleted since the refusal are dropped by the joins,
// so a batch never fails for them and is never stuck. Two statements and
// joins rather than one with a modifying CTE and EXISTS: a batch spans
// tenants, and Citus runs neither of those across shards.
const (
	logRefusedDeliveriesSQL = `
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address)
SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
       d.method, d.path, d.query, d.headers, d.truncated, d.client_address
FROM ` + deliveryRowsSQL + `
JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id`
	countRefusalsSQL = `
INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT r.tenant_id, r.provider_id, r.bucket, '` + domain.DeliveryRejected + `', @shard, r.n
FROM unnest(@tenants::bigint[], @providers::bigint[], @hours::timestamptz[], @counts::bigint[]) AS r (tenant_id, provider_id, bucket, n)
JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n`
)

// LogRefusals implements domain.IngestService. The counts must name each
// (tenant, provider, hour) once.
func (w *Writer) LogRefusals(ctx context.Context, counts []domain.RefusalCount, samples []domain.Delivery) error {
	if len(counts) == 0 && len(samples) == 0 {
		return nil
	}
	args := pgx.NamedArgs{"shard": rand.IntN(w.counterShards)}
	tenants, providers, hours, ns := make([]int64, len(counts)), make([]int64, len(counts)), make([]time.Time, len(counts)), make([]int64, len(counts))
	for i, c := range counts {
		tenants[i], providers[i], hours[i], ns[i] = c.TenantID, c.ProviderID, c.Hour, c.N
	}
	args["tenants"], args["providers"], args["hours"], args["counts"] = tenants, providers, hours, ns
	var rows deliveryRows
	for _, d := range samples {
		rows.add(d, 0)
	}
	rows.set(args)
	return pg.Translate(pg.WithTx(ctx, w.pool, func(tx pgx.Tx) error {
		if len(samples) > 0 {
			if _, err := tx.Exec(ctx, logRefusedDeliveriesSQL, args); err != nil {
				return err
			}
		}
		if len(counts) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, countRefusalsSQL, args)
		return err
	}))
}
