package alertcheck

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// refusalsSQL counts each provider's refused deliveries within its
// tenant's window. Refusals are written in batches (postgres/ingest's
// LogRefusals) with an exact count per provider and minute in
// refusal_minutes; the count is the sum of the minutes from the one in
// which the window begins through @now. That first minute counts whole,
// so a count may include refusals up to a minute older than the window,
// but never leaves out one within it. The boundary is truncated in UTC:
// in the session's time zone an offset with seconds (historical ones)
// would move it.
const refusalsSQL = `
WITH ` + settingsSQL + `, counted AS (
    SELECT m.provider_id, sum(m.n) AS n
    FROM settings s
    JOIN refusal_minutes m ON m.tenant_id = @tenant_id
        AND m.minute >= date_trunc('minute', @now::timestamptz - s.window, 'UTC') AND m.minute <= @now::timestamptz
    GROUP BY m.provider_id
)
SELECT p.tenant_id, p.name, s.threshold, s.window_seconds, coalesce(c.n, 0)::bigint
FROM settings s
JOIN providers p ON p.tenant_id = @tenant_id
LEFT JOIN counted c ON c.provider_id = p.id
ORDER BY p.tenant_id, p.name`

func init() {
	measures(alerting.Refusals, measurement{sql: refusalsSQL, scan: scanRefusals})
}

func scanRefusals(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	if err := row.Scan(&r.TenantID, &r.Provider, &r.Threshold, &window, &r.Count); err != nil {
		return r, err
	}
	r.Subject, r.Window = r.Provider, seconds(window)
	return r, nil
}
