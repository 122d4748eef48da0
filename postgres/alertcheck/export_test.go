package alertcheck

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain/alerting"
)

// RefusalsCounted is what the refusals rule counts of each provider of
// tenant as of now (the rule enabled in the tenant), by name.
func RefusalsCounted(ctx context.Context, pool *pgxpool.Pool, tenant int64, now time.Time) (map[string]int64, error) {
	var b rulesBatch
	d, _ := alerting.Lookup(alerting.Refusals)
	b.queue(d, now, tenant, nil)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	ms, err := b.send(ctx, tx)
	counts := map[string]int64{}
	for _, m := range ms {
		counts[m.Provider] = m.Value
	}
	return counts, err
}
