package alertcheck

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// deadLettersSQL answers the tenant's setting with its dead letters and
// when the newest was set aside, as the stream said.
const deadLettersSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, @dead::bigint, @last_dead::timestamptz FROM settings s`

func init() {
	measures(alerting.DeadLetters, measurement{sql: deadLettersSQL, scan: scanDeadLetters,
		fromFacts: func(f alerting.QueueFact) (pgx.NamedArgs, bool) {
			return pgx.NamedArgs{"dead": f.DeadLetters, "last_dead": f.LastDead}, f.DeadLetters > 0
		}})
}

// scanDeadLetters reads the dead letters as Count, when the newest was set
// aside as Last.
func scanDeadLetters(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	if err := row.Scan(&r.TenantID, &r.Threshold, &window, &r.Count, &r.Last); err != nil {
		return r, err
	}
	r.Window = seconds(window)
	return r, nil
}
