package alertcheck

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// The queue rules measure what queued mode's stream said (alerting.
// QueueFacts, read by the evaluating node before its transaction), with
// each tenant's setting, one statement per tenant the facts name. A tenant
// they do not name has nothing queued and no dead letter: it is not
// measured, so its alert resolves.

const queueBacklogSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, @oldest::timestamptz FROM settings s`

const deadLettersSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, @dead::bigint, @last_dead::timestamptz FROM settings s`

// queueFacts queues the queue rules' statements for the tenants of facts.
func (b *rulesBatch) queueFacts(now time.Time, facts []alerting.QueueFact) {
	for _, f := range facts {
		if !f.Oldest.IsZero() {
			b.queue(alerting.QueueBacklog, queueBacklogSQL, f.TenantID, pgx.NamedArgs{"oldest": f.Oldest}, scanBacklog(now))
		}
		if f.DeadLetters > 0 {
			b.queue(alerting.DeadLetters, deadLettersSQL, f.TenantID, pgx.NamedArgs{"dead": f.DeadLetters, "last_dead": f.LastDead},
				scanDeadLetters(now))
		}
	}
}

func scanBacklog(now time.Time) func(pgx.CollectableRow) (alerting.Measure, error) {
	return func(row pgx.CollectableRow) (alerting.Measure, error) {
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
	}
}

func scanDeadLetters(now time.Time) func(pgx.CollectableRow) (alerting.Measure, error) {
	return func(row pgx.CollectableRow) (alerting.Measure, error) {
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
	}
}
