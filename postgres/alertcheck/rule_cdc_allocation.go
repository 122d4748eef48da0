package alertcheck

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// cdcAllocationSQL reads, per provider whose Change Data Capture stream is
// on, its org's delivery allocation as its subscriber last read it.
const cdcAllocationSQL = `
WITH ` + settingsSQL + `
SELECT c.tenant_id, p.name, s.threshold, s.window_seconds, coalesce(c.allocation_max, 0),
       coalesce(c.allocation_max - c.allocation_remaining, 0), c.allocation_at
FROM settings s
JOIN cdc_streams c ON c.tenant_id = @tenant_id AND c.enabled
JOIN providers p ON p.tenant_id = @tenant_id AND p.id = c.provider_id
ORDER BY c.tenant_id, p.name`

func init() {
	measures(alerting.CDCAllocation, measurement{sql: cdcAllocationSQL, scan: scanAllocation})
}

// scanAllocation reads the allocation as Allocation, its use as Count and
// when it was read as Last.
func scanAllocation(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	var at *time.Time
	if err := row.Scan(&r.TenantID, &r.Provider, &r.Threshold, &window, &r.Allocation, &r.Count, &at); err != nil {
		return r, err
	}
	r.Subject, r.Window = r.Provider, seconds(window)
	if at != nil {
		r.Last = *at
	}
	return r, nil
}
