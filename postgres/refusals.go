package postgres

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
)

// logRefusalsSQL writes a batch of refused deliveries in one statement:
// the sampled deliveries, and each provider's refusals of an hour added to
// its DeliveryRejected counter. Rows of a provider deleted since the
// refusal are dropped, so a batch never fails for them and is never stuck.
const logRefusalsSQL = `
WITH sampled AS (
    INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                            method, path, query, headers, truncated, client_address)
    SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, 0, d.body,
           d.method, d.path, d.query, d.headers, d.truncated, d.client_address
    FROM unnest(@sample_tenants::bigint[], @sample_ids::uuid[], @sample_times::timestamptz[], @sample_providers::bigint[],
                @sample_statuses::smallint[], @sample_signatures::text[], @sample_reasons::text[], @sample_bodies::bytea[],
                @sample_methods::text[], @sample_paths::text[], @sample_queries::text[], @sample_headers::jsonb[],
                @sample_truncated::boolean[], @sample_clients::text[])
         AS d (tenant_id, id, received_at, provider_id, status, signature, reason, body,
               method, path, query, headers, truncated, client_address)
    WHERE EXISTS (SELECT FROM providers p WHERE p.tenant_id = d.tenant_id AND p.id = d.provider_id)
)
INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT r.tenant_id, r.provider_id, r.bucket, '` + domain.DeliveryRejected + `', @shard, r.n
FROM unnest(@tenants::bigint[], @providers::bigint[], @hours::timestamptz[], @counts::bigint[]) AS r (tenant_id, provider_id, bucket, n)
WHERE EXISTS (SELECT FROM providers p WHERE p.tenant_id = r.tenant_id AND p.id = r.provider_id)
ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n`

// LogRefusals implements domain.IngestService. The counts must name each
// (tenant, provider, hour) once.
func (s *Store) LogRefusals(ctx context.Context, counts []domain.RefusalCount, samples []domain.Delivery) error {
	if len(counts) == 0 && len(samples) == 0 {
		return nil
	}
	args := pgx.NamedArgs{"shard": rand.IntN(s.counterShards)}
	tenants, providers, hours, ns := make([]int64, len(counts)), make([]int64, len(counts)), make([]time.Time, len(counts)), make([]int64, len(counts))
	for i, c := range counts {
		tenants[i], providers[i], hours[i], ns[i] = c.TenantID, c.ProviderID, c.Hour, c.N
	}
	args["tenants"], args["providers"], args["hours"], args["counts"] = tenants, providers, hours, ns
	n := len(samples)
	sTenants, ids, times, sProviders := make([]int64, n), make([]string, n), make([]time.Time, n), make([]int64, n)
	statuses, signatures, reasons, bodies := make([]int16, n), make([]string, n), make([]*string, n), make([][]byte, n)
	for i, d := range samples {
		sTenants[i], ids[i], times[i], sProviders[i] = d.TenantID, d.ID, d.ReceivedAt, d.ProviderID
		statuses[i], signatures[i], reasons[i], bodies[i] = int16(d.Status), d.Signature, nullString(d.Reason), d.Body
	}
	args["sample_tenants"], args["sample_ids"], args["sample_times"], args["sample_providers"] = sTenants, ids, times, sProviders
	args["sample_statuses"], args["sample_signatures"], args["sample_reasons"], args["sample_bodies"] = statuses, signatures, reasons, bodies
	methods, paths, queries, headers := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	truncated, clients := make([]*bool, n), make([]*string, n)
	for i, d := range samples {
		c := columnsOf(d.Request)
		methods[i], paths[i], queries[i], headers[i], truncated[i], clients[i] = c.method, c.path, c.query, c.headers, c.truncated, c.client
	}
	args["sample_methods"], args["sample_paths"], args["sample_queries"] = methods, paths, queries
	args["sample_headers"], args["sample_truncated"], args["sample_clients"] = headers, truncated, clients
	_, err := s.pool.Exec(ctx, logRefusalsSQL, args)
	return translate(err)
}
