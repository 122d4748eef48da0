// Package stats answers the counts of a tenant's outcomes: the overview,
// which folds the counter shards of closed hours as it reads, and Stats.
package stats

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Counters reads the counters on the read pool and folds them on pool.
type Counters struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the statistics of pools.
func New(pools pg.Pools) *Counters { return &Counters{pool: pools.Write, read: pools.ForReads()} }

var _ domain.StatsService = (*Counters)(nil)

// overviewFoldSQL folds the counter shards of the tenant's closed hours
// into shard 0, keeping every sum: ingest spreads an hour's increments over
// shards so that concurrent deliveries do not queue on one row, but once
// the hour is over nothing contends for it, and the overview would
// otherwise add up to sixteen rows where one will do. The newest closed
// hours go first, at most @limit rows a time, so a long unfolded history
// is folded over several reads. A shard row updated meanwhile is re-checked
// after its lock wait and folded on a later read.
const overviewFoldSQL = `
WITH spread AS (
    DELETE FROM outcome_counters c
    USING (SELECT provider_id, bucket, outcome, shard FROM outcome_counters
           WHERE tenant_id = @tenant_id AND shard <> 0 AND bucket < @closed_before
           ORDER BY bucket DESC LIMIT @fold_limit) f
    WHERE c.tenant_id = @tenant_id AND c.provider_id = f.provider_id AND c.bucket = f.bucket
      AND c.outcome = f.outcome AND c.shard = f.shard
    RETURNING c.provider_id, c.bucket, c.outcome, c.n
)
INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
SELECT @tenant_id, provider_id, bucket, outcome, 0, sum(n) FROM spread GROUP BY 1, 2, 3, 4
ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n`

// overviewFoldLimit bounds the rows one read folds.
const overviewFoldLimit = 20000

const overviewProvidersSQL = `
SELECT id, name FROM providers WHERE tenant_id = @tenant_id ORDER BY name`

// overviewCountsSQL reads the counters of the longest window once, summed
// over shards into one row per provider, outcome, UTC day and span: 0 for
// buckets inside the shortest window, 1 for the middle one, 2 for the rest.
// Go adds the spans up into windows and the days into the chart.
const overviewCountsSQL = `
SELECT provider_id, outcome, date_trunc('day', bucket, 'UTC'),
       CASE WHEN bucket > @since_day THEN 0 WHEN bucket > @since_week THEN 1 ELSE 2 END,
       sum(n)::bigint
FROM outcome_counters
WHERE tenant_id = @tenant_id AND bucket > @since_month
GROUP BY 1, 2, 3, 4`

const overviewOpenConflictsSQL = `
SELECT count(*) FROM conflicts WHERE tenant_id = @tenant_id AND status = 'open'`

const overviewDeliveriesSQL = `
SELECT d.id::text, p.name, d.received_at, d.status, d.signature, d.reason, d.event_count
FROM deliveries d JOIN providers p ON p.tenant_id = d.tenant_id AND p.id = d.provider_id
WHERE d.tenant_id = @tenant_id
ORDER BY d.received_at DESC, d.id DESC
LIMIT @limit`

// Overview implements domain.StatsService. It first folds the counter
// shards of closed hours (see overviewFoldSQL); that and its four reads go
// to the database as one batch, in one round trip and one transaction.
func (s *Counters) Overview(ctx context.Context, tenantID int64, now time.Time) (domain.Overview, error) {
	for attempt := 1; ; attempt++ {
		ov, err := s.overview(ctx, tenantID, now)
		if err != nil && pg.Retryable(err) && attempt < 3 {
			continue // two folds raced over the same rows
		}
		if err != nil {
			return domain.Overview{}, pg.Translate(err)
		}
		return ov, nil
	}
}

func (s *Counters) overview(ctx context.Context, tenantID int64, now time.Time) (domain.Overview, error) {
	var ov domain.Overview
	windows := domain.OverviewWindows
	args := pgx.NamedArgs{"tenant_id": tenantID, "since_day": now.Add(-windows[0]),
		"since_week": now.Add(-windows[1]), "since_month": now.Add(-windows[2]), "limit": domain.OverviewDeliveries,
		"closed_before": now.Add(-pg.OverviewFoldGrace).Truncate(time.Hour), "fold_limit": overviewFoldLimit,
		"overload_since": now.Add(-24 * time.Hour).Truncate(time.Hour)}

	today := pg.UTCDay(now)
	firstDay := today.AddDate(0, 0, 1-domain.OverviewChartDays)
	ov.Days = make([]domain.DayCounts, domain.OverviewChartDays)
	for i := range ov.Days {
		ov.Days[i] = domain.DayCounts{Day: firstDay.AddDate(0, 0, i), Counts: domain.OutcomeCounts{}}
	}
	byID := map[int64]*domain.ProviderCounts{}
	var ids []int64

	batch := &pgx.Batch{}
	batch.Queue(overviewFoldSQL, args)
	batch.Queue(overviewProvidersSQL, args).Query(func(rows pgx.Rows) error {
		var (
			id   int64
			name string
		)
		_, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			pc := domain.ProviderCounts{Provider: name, Windows: make([]domain.OutcomeCounts, len(windows))}
			for i := range pc.Windows {
				pc.Windows[i] = domain.OutcomeCounts{}
			}
			ov.Providers = append(ov.Providers, pc)
			ids = append(ids, id)
			return nil
		})
		for i, id := range ids {
			byID[id] = &ov.Providers[i]
		}
		return err
	})
	batch.Queue(overviewCountsSQL, args).Query(func(rows pgx.Rows) error {
		var (
			providerID, n int64
			outcome       string
			day           time.Time
			span          int
		)
		_, err := pgx.ForEachRow(rows, []any{&providerID, &outcome, &day, &span, &n}, func() error {
			if pc := byID[providerID]; pc != nil {
				// A bucket counts in its own span's window and every longer one.
				for w := span; w < len(windows); w++ {
					pc.Windows[w][outcome] += n
				}
			}
			if since := day.Sub(firstDay); since >= 0 && since < domain.OverviewChartDays*24*time.Hour {
				ov.Days[since/(24*time.Hour)].Counts[outcome] += n
			}
			return nil
		})
		return err
	})
	batch.Queue(overviewOpenConflictsSQL, args).QueryRow(func(row pgx.Row) error {
		return row.Scan(&ov.OpenConflicts)
	})
	batch.Queue(overviewDeliveriesSQL, args).Query(func(rows pgx.Rows) error {
		var err error
		ov.Deliveries, err = pgx.CollectRows(rows, scanDeliveryBrief)
		return err
	})
	batch.Queue(overviewOverloadsSQL, args).Query(func(rows pgx.Rows) error {
		var (
			reason string
			n      int64
		)
		_, err := pgx.ForEachRow(rows, []any{&reason, &n}, func() error {
			if ov.Overloads == nil {
				ov.Overloads = map[string]int64{}
			}
			ov.Overloads[reason] = n
			return nil
		})
		return err
	})
	return ov, s.read.SendBatch(ctx, batch).Close()
}

// overviewOverloadsSQL counts the tenant's deliveries answered 503 for
// overload in the last 24 hours, by reason: the hours from the one that
// held @overload_since.
const overviewOverloadsSQL = `
SELECT reason, sum(n)::bigint FROM overload_refusals
WHERE tenant_id = @tenant_id AND hour >= @overload_since
GROUP BY reason`

func scanDeliveryBrief(row pgx.CollectableRow) (domain.DeliveryBrief, error) {
	var (
		d      domain.DeliveryBrief
		reason *string
	)
	err := row.Scan(&d.ID, &d.Provider, &d.ReceivedAt, &d.Status, &d.Signature, &reason, &d.EventCount)
	if reason != nil {
		d.Reason = *reason
	}
	return d, err
}

// statsSQL answers whether the named provider exists (always true when no
// provider is named) and the all-time counts by outcome.
const statsSQL = `
WITH prov AS (
    SELECT id FROM providers WHERE tenant_id = @tenant_id AND name = @provider
)
SELECT @provider::text IS NULL OR EXISTS (SELECT FROM prov),
       coalesce((SELECT json_object_agg(outcome, n) FROM (
           SELECT outcome, sum(n)::bigint AS n FROM outcome_counters
           WHERE tenant_id = @tenant_id AND (@provider::text IS NULL OR provider_id IN (SELECT id FROM prov))
           GROUP BY outcome) c), '{}')`

// Stats implements domain.StatsService. Every outcome is present, zeros
// included; an unknown provider is an ENOTFOUND error.
func (s *Counters) Stats(ctx context.Context, tenantID int64, provider string) (map[domain.Outcome]int64, error) {
	var (
		exists bool
		counts map[string]int64
	)
	err := s.read.QueryRow(ctx, statsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider": pg.NullString(provider)}).
		Scan(&exists, &counts)
	if err != nil {
		return nil, pg.Translate(err)
	}
	if !exists {
		return nil, pg.NotFound("provider %q not found", provider)
	}
	stats := make(map[domain.Outcome]int64, len(domain.Outcomes))
	for _, o := range domain.Outcomes {
		stats[o] = counts[string(o)]
	}
	return stats, nil
}
