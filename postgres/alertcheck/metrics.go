package alertcheck

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// firingCountsSQL counts the firing alerts of each tenant and rule that
// has an alert firing or resolved within the last @recent_seconds, so a
// resolved alert's series reads 0 for a while before it goes.
const firingCountsSQL = `
SELECT t.slug, a.rule, count(*) FILTER (WHERE a.resolved_at IS NULL)
FROM alerts a
JOIN tenants t ON t.id = a.tenant_id
WHERE a.resolved_at IS NULL OR a.resolved_at > now() - make_interval(secs => @recent_seconds::bigint)
GROUP BY t.slug, a.rule
ORDER BY t.slug, a.rule`

// metricsRecent is how long a (tenant, rule) whose alerts all resolved
// keeps its series at 0.
const metricsRecent = 24 * time.Hour

// metricsTimeout bounds the read at each scrape.
const metricsTimeout = 2 * time.Second

var (
	alertsFiringDesc = prometheus.NewDesc("tidemark_alerts_firing",
		"Alerts firing now, per rule, in all tenants (0 for a rule whose last alert resolved within the last 24 hours).",
		[]string{"rule"}, nil)
	alertsFiringByTenantDesc = prometheus.NewDesc("tidemark_alerts_firing",
		"Alerts firing now, per tenant and rule (0 for a rule whose last alert resolved within the last 24 hours).",
		[]string{"tenant", "rule"}, nil)
)

// AlertMetrics returns the collector of tidemark_alerts_firing: by rule,
// or by tenant and rule when byTenant (serve --metrics-tenant-labels),
// since whoever reaches /metrics would otherwise read which tenants have
// trouble. It reads the alerts table when collected, so that every node
// exports the same values whichever evaluates (serve caches the reading,
// internal/metriccache); while the database does not answer it exports
// nothing and logs to log.
func (c *Evaluations) AlertMetrics(log *slog.Logger, byTenant bool) prometheus.Collector {
	return alertsCollector{c: c, log: log, byTenant: byTenant}
}

type alertsCollector struct {
	c        *Evaluations
	log      *slog.Logger
	byTenant bool
}

func (a alertsCollector) desc() *prometheus.Desc {
	if a.byTenant {
		return alertsFiringByTenantDesc
	}
	return alertsFiringDesc
}

func (a alertsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc() }

func (a alertsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	counts, err := a.c.FiringCounts(ctx)
	if err != nil {
		a.log.Error("read the firing alerts for /metrics", "err", err)
		return
	}
	if a.byTenant {
		for _, n := range counts {
			ch <- prometheus.MustNewConstMetric(alertsFiringByTenantDesc, prometheus.GaugeValue, float64(n.Firing), n.Tenant, n.Rule)
		}
		return
	}
	byRule := map[string]int64{}
	for _, n := range counts {
		byRule[n.Rule] += n.Firing
	}
	for rule, firing := range byRule {
		ch <- prometheus.MustNewConstMetric(alertsFiringDesc, prometheus.GaugeValue, float64(firing), rule)
	}
}

// FiringCount is the number of firing alerts of a tenant's rule.
type FiringCount struct {
	Tenant, Rule string
	Firing       int64
}

// FiringCounts reads what tidemark_alerts_firing exports.
func (c *Evaluations) FiringCounts(ctx context.Context) ([]FiringCount, error) {
	rows, err := c.read.Query(ctx, firingCountsSQL, pgx.NamedArgs{"recent_seconds": int64(metricsRecent / time.Second)})
	if err != nil {
		return nil, pg.Translate(err)
	}
	counts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (FiringCount, error) {
		var n FiringCount
		err := row.Scan(&n.Tenant, &n.Rule, &n.Firing)
		return n, err
	})
	return counts, pg.Translate(err)
}
