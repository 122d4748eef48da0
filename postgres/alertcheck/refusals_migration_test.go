package alertcheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/postgres/alertcheck"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// Migration 00047 carries the refusals counted per hour before it into
// the per-minute counts, each hour's in its last minute (the current
// hour's in the current minute), so that the refusals alert counts them
// after the upgrade: the last 30 days' only, a provider's shards summed.
func TestMigrationCarriesHourlyRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, p := pgtest.MigratedTo(t, 46)
	hour := time.Now().UTC().Truncate(time.Hour)
	_, err := pool.Exec(ctx, `
WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', '') RETURNING id),
     p AS (INSERT INTO providers (tenant_id, name, kind) SELECT id, 'crm', 'standard' FROM t RETURNING tenant_id, id)
INSERT INTO outcome_counters (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT p.tenant_id, p.id, c.bucket, c.outcome, c.shard, c.n
FROM p, (VALUES ($1::timestamptz, 'delivery_rejected', 0, 1), ($1, 'delivery_rejected', 3, 2), ($1, 'applied', 0, 9),
                 ($2, 'delivery_rejected', 5, 5), ($3, 'delivery_rejected', 0, 4)) AS c (bucket, outcome, shard, n)`,
		hour, hour.Add(-2*time.Hour), hour.Add(-31*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 47); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rows, err := pool.Query(ctx, `SELECT minute, n FROM refusal_minutes ORDER BY minute`)
	if err != nil {
		t.Fatal(err)
	}
	var minutes []time.Time
	var ns []int64
	for rows.Next() {
		var m time.Time
		var n int64
		if err := rows.Scan(&m, &n); err != nil {
			t.Fatal(err)
		}
		minutes, ns = append(minutes, m), append(ns, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ns) != 2 || !minutes[0].Equal(hour.Add(-time.Hour-time.Minute)) || ns[0] != 5 ||
		minutes[1].Before(hour) || minutes[1].After(now) || ns[1] != 3 {
		t.Fatalf("minutes %v with counts %v, want 5 at %s and 3 in this hour's current minute", minutes, ns, hour.Add(-time.Hour-time.Minute))
	}
	var tenant int64
	if err := pool.QueryRow(ctx, `SELECT id FROM tenants`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	// The rule's default window, 5 minutes.
	if counts, err := alertcheck.RefusalsCounted(ctx, pool, tenant, now); err != nil || counts["crm"] != 3 {
		t.Fatalf("the refusals rule counts %v (%v), want this hour's 3", counts, err)
	}
}
