package alertcheck

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The queue rules measure what queued mode's stream said (alerting.
// QueueFacts, read by the evaluating node before its transaction), with
// each tenant's setting. A tenant the facts do not name has nothing
// queued and no dead letter: it is not measured, so its alert resolves.

const queueBacklogSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, f.oldest
FROM settings s
JOIN unnest(@tenants::bigint[], @oldest::timestamptz[]) AS f (tenant_id, oldest) ON f.tenant_id = s.tenant_id
ORDER BY s.tenant_id`

const deadLettersSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, f.dead, f.last_dead
FROM settings s
JOIN unnest(@tenants::bigint[], @dead::bigint[], @last_dead::timestamptz[]) AS f (tenant_id, dead, last_dead)
    ON f.tenant_id = s.tenant_id
ORDER BY s.tenant_id`

// measureQueue measures the queue rules from facts.
func measureQueue(ctx context.Context, q pgx.Tx, now time.Time, facts []alerting.QueueFact) ([]alerting.Measure, error) {
	var waiting, deadTenants, dead []int64
	var oldest, lastDead []time.Time
	for _, f := range facts {
		if !f.Oldest.IsZero() {
			waiting, oldest = append(waiting, f.TenantID), append(oldest, f.Oldest)
		}
		if f.DeadLetters > 0 {
			deadTenants, dead, lastDead = append(deadTenants, f.TenantID), append(dead, f.DeadLetters), append(lastDead, f.LastDead)
		}
	}
	backlog, err := measureRule(ctx, q, alerting.QueueBacklog, queueBacklogSQL,
		pgx.NamedArgs{"tenants": waiting, "oldest": oldest}, func(row pgx.CollectableRow) (alerting.Measure, error) {
			var m alerting.Measure
			var window int64
			var since time.Time
			if err := row.Scan(&m.TenantID, &m.Threshold, &window, &since); err != nil {
				return m, err
			}
			setting(&m, window)
			age := max(now.Sub(since), 0)
			m.Value, m.Holds = int64(age/time.Second), age >= m.Window
			m.Summary = fmt.Sprintf("The oldest queued delivery has waited %s, longer than %s: the queue workers are behind or stopped.",
				age.Round(time.Second), m.Window)
			return m, nil
		})
	if err != nil {
		return nil, err
	}
	letters, err := measureRule(ctx, q, alerting.DeadLetters, deadLettersSQL,
		pgx.NamedArgs{"tenants": deadTenants, "dead": dead, "last_dead": lastDead}, func(row pgx.CollectableRow) (alerting.Measure, error) {
			var m alerting.Measure
			var window int64
			var last time.Time
			if err := row.Scan(&m.TenantID, &m.Threshold, &window, &m.Value, &last); err != nil {
				return m, err
			}
			setting(&m, window)
			m.Holds = !last.Before(now.Add(-m.Window))
			m.Summary = fmt.Sprintf("A queued delivery became a dead letter %s ago (%d held in the dead-letter stream).",
				max(now.Sub(last), 0).Round(time.Second), m.Value)
			return m, nil
		})
	return append(backlog, letters...), err
}

// measureRule runs one rule's statement with the rule's default setting
// and args, and scans its measures.
func measureRule(ctx context.Context, q pgx.Tx, rule alerting.Rule, sql string, args pgx.NamedArgs,
	scan func(pgx.CollectableRow) (alerting.Measure, error)) ([]alerting.Measure, error) {
	d := alerting.Default(rule)
	args["rule"], args["enabled"], args["threshold"], args["window_seconds"] =
		string(rule), d.Enabled, d.Threshold, int64(d.Window/time.Second)
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	ms, err := pgx.CollectRows(rows, scan)
	for i := range ms {
		ms[i].Rule = rule
	}
	return ms, pg.Translate(err)
}
