package ingest

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// logRefusedDeliveriesSQL, countRefusalMinutesSQL and countRefusalsSQL
// write a batch of refused deliveries, in one transaction: the sampled
// deliveries; each provider's refusals of a minute added to its count in
// refusal_minutes (migration 00047), which the refusals alert sums; and
// each provider's refusals of an hour added to its DeliveryRejected
// counter, which the overview shows. Rows of a provider deleted since the
// refusal are dropped by the joins, so a batch never fails for them and
// is never stuck. Two nodes' flushes may add to the same rows: each
// statement takes them in key order, so that neither waits for the other
// in a cycle. Statements and joins rather than one with a modifying CTE
// and EXISTS: a batch spans tenants, and Citus runs neither of those
// across shards.
const (
	logRefusedDeliveriesSQL = `
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address)
SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
       d.method, d.path, d.query, d.headers, d.truncated, d.client_address
FROM ` + deliveryRowsSQL + `
JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id`
	countRefusalMinutesSQL = `
INSERT INTO refusal_minutes AS m (tenant_id, minute, provider_id, n)
SELECT r.tenant_id, r.minute, r.provider_id, r.n
FROM unnest(@tenants::bigint[], @minutes::timestamptz[], @providers::bigint[], @counts::bigint[]) AS r (tenant_id, minute, provider_id, n)
JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
ORDER BY r.tenant_id, r.minute, r.provider_id
ON CONFLICT (tenant_id, minute, provider_id) DO UPDATE SET n = m.n + EXCLUDED.n`
	countRefusalsSQL = `
INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT r.tenant_id, r.provider_id, r.bucket, '` + domain.DeliveryRejected + `', @shard, r.n
FROM unnest(@h_tenants::bigint[], @h_providers::bigint[], @hours::timestamptz[], @h_counts::bigint[]) AS r (tenant_id, provider_id, bucket, n)
JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id
ORDER BY r.tenant_id, r.provider_id, r.bucket
ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n`
)

// LogRefusals implements domain.IngestService. Counts that name the same
// (tenant, provider, minute) are added together.
func (w *Writer) LogRefusals(ctx context.Context, counts []domain.RefusalCount, samples []domain.Delivery) error {
	if len(counts) == 0 && len(samples) == 0 {
		return nil
	}
	args := pgx.NamedArgs{"shard": rand.IntN(w.counterShards)}
	minutes, hours := refusalCounts(counts, time.Minute), refusalCounts(counts, time.Hour)
	args["tenants"], args["minutes"], args["providers"], args["counts"] = minutes.columns()
	args["h_tenants"], args["hours"], args["h_providers"], args["h_counts"] = hours.columns()
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
		if _, err := tx.Exec(ctx, countRefusalMinutesSQL, args); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, countRefusalsSQL, args)
		return err
	}))
}

// bucketCounts are refusal counts summed per tenant, provider and bucket
// (a minute or an hour), in key order.
type bucketCounts []domain.RefusalCount

// refusalCounts sums counts per tenant, provider and the bucket of size
// each count's minute falls in.
func refusalCounts(counts []domain.RefusalCount, size time.Duration) bucketCounts {
	type key struct {
		tenant, provider int64
		bucket           time.Time
	}
	sums := map[key]int64{}
	for _, c := range counts {
		sums[key{c.TenantID, c.ProviderID, c.Minute.UTC().Truncate(size)}] += c.N
	}
	out := make(bucketCounts, 0, len(sums))
	for k, n := range sums {
		out = append(out, domain.RefusalCount{TenantID: k.tenant, ProviderID: k.provider, Minute: k.bucket, N: n})
	}
	slices.SortFunc(out, func(a, b domain.RefusalCount) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), a.Minute.Compare(b.Minute), cmp.Compare(a.ProviderID, b.ProviderID))
	})
	return out
}

// columns are the counts as the statements' arrays: tenants, buckets,
// providers and counts.
func (b bucketCounts) columns() (tenants []int64, buckets []time.Time, providers, ns []int64) {
	for _, c := range b {
		tenants, buckets, providers, ns = append(tenants, c.TenantID), append(buckets, c.Minute), append(providers, c.ProviderID), append(ns, c.N)
	}
	return tenants, buckets, providers, ns
}
