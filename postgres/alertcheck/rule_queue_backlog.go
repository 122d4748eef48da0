package alertcheck

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// queueBacklogSQL answers the tenant's setting with when its oldest
// queued delivery was stored, as the stream said.
const queueBacklogSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, @oldest::timestamptz FROM settings s`

func init() {
	measures(alerting.QueueBacklog, measurement{sql: queueBacklogSQL, scan: scanBacklog,
		fromFacts: func(f alerting.QueueFact) (pgx.NamedArgs, bool) {
			return pgx.NamedArgs{"oldest": f.Oldest}, !f.Oldest.IsZero()
		}})
}

// scanBacklog reads when the oldest queued delivery was stored as Since.
func scanBacklog(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	if err := row.Scan(&r.TenantID, &r.Threshold, &window, &r.Since); err != nil {
		return r, err
	}
	r.Window = seconds(window)
	return r, nil
}
