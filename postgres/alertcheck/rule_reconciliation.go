package alertcheck

import (
	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// reconciliationSQL counts the violations of each tenant in the last
// stored reconciliation report (postgres/reconcile: one report of every
// tenant under tenant_id 0, keeping the first violations of each
// invariant).
const reconciliationSQL = `
WITH ` + settingsSQL + `, last AS (
    SELECT r.violations FROM reconciliation_reports r
    WHERE r.tenant_id = @report_tenant::bigint AND r.started_at <= @now::timestamptz
    ORDER BY r.started_at DESC, r.id DESC LIMIT 1
)
SELECT s.tenant_id, s.threshold, s.window_seconds,
       (SELECT count(*) FROM last l, jsonb_array_elements(l.violations) v WHERE v->>'tenant' = s.slug)
FROM settings s
WHERE EXISTS (SELECT FROM last)
ORDER BY s.tenant_id`

// reportTenant is the tenant_id of the reconciliation reports
// (postgres/reconcile).
const reportTenant = 0

func init() {
	measures(alerting.Reconciliation, measurement{sql: reconciliationSQL,
		args: pgx.NamedArgs{"report_tenant": reportTenant}, scan: scanReconciliation})
}

func scanReconciliation(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	if err := row.Scan(&r.TenantID, &r.Threshold, &window, &r.Count); err != nil {
		return r, err
	}
	r.Window = seconds(window)
	return r, nil
}
