package ingest

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// logRefusalsSQL writes a batch of refused deliveries in one statement:
// the sampled deliveries, and each provider's refusals of an hour added to
// its DeliveryRejected counter. Rows of a provider deleted since the
// refusal are dropped, so a batch never fails for them and is never stuck.
const logRefusalsSQL = `
WITH sampled AS (
    INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                            method, path, query, headers, truncated, client_address)
    SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
           d.method, d.path, d.query, d.headers, d.truncated, d.client_address
    FROM ` + deliveryRowsSQL + `
    WHERE EXISTS (SELECT FROM providers p WHERE p.tenant_id = d.tenant_id AND p.id = d.provider_id)
)
INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT r.tenant_id, r.provider_id, r.bucket, '` + domain.DeliveryRejected + `', @shard, r.n
FROM unnest(@tenants::bigint[], @providers::bigint[], @hours::timestamptz[], @counts::bigint[]) AS r (tenant_id, provider_id, bucket, n)
WHERE EXISTS (SELECT FROM providers p WHERE p.tenant_id = r.tenant_id AND p.id = r.provider_id)
ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n`

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
	_, err := w.pool.Exec(ctx, logRefusalsSQL, args)
	return pg.Translate(err)
}
