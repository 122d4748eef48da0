package alertcheck

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// conflictsOpenSQL counts each tenant's open conflicts, and those of them
// detected within the window.
const conflictsOpenSQL = `
WITH ` + settingsSQL + `
SELECT s.tenant_id, s.threshold, s.window_seconds, count(c.id),
       count(c.id) FILTER (WHERE c.detected_at > @now::timestamptz - s.window)
FROM settings s
LEFT JOIN conflicts c ON c.tenant_id = @tenant_id AND c.status = 'open'
GROUP BY s.tenant_id, s.threshold, s.window_seconds
ORDER BY s.tenant_id`

func init() {
	measures(alerting.ConflictsOpen, measurement{sql: conflictsOpenSQL, scan: scanConflicts})
}

// scanConflicts reads the open conflicts as Count, those detected within
// the window as Part.
func scanConflicts(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	if err := row.Scan(&r.TenantID, &r.Threshold, &window, &r.Count, &r.Part); err != nil {
		return r, err
	}
	r.Window = seconds(window)
	return r, nil
}
