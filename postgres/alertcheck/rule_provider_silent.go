package alertcheck

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
)

// providerSilentSQL finds each provider's last authenticated (2xx,
// replays aside) delivery. A scan of the tenant's delivery log back to it
// could cover days, so it looks in one hour only: the latest hour whose
// outcome counters (keyed by provider) hold events that were not refused.
// When that hour's deliveries are gone (retention), its end stands for
// the last delivery.
const providerSilentSQL = `
WITH ` + settingsSQL + `
SELECT p.tenant_id, p.name, s.threshold, s.window_seconds, p.created_at,
       coalesce(d.received_at, CASE WHEN h.hour IS NOT NULL THEN least(h.hour + interval '1 hour', @now::timestamptz) END)
FROM settings s
JOIN providers p ON p.tenant_id = @tenant_id AND p.removed_at IS NULL
LEFT JOIN LATERAL (
    SELECT max(c.bucket) AS hour FROM outcome_counters c
    WHERE c.tenant_id = @tenant_id AND c.provider_id = p.id AND c.outcome <> '` + domain.DeliveryRejected + `'
      AND c.bucket <= @now::timestamptz
) h ON true
LEFT JOIN LATERAL (
    SELECT x.received_at FROM deliveries x
    WHERE x.tenant_id = @tenant_id AND x.received_at >= h.hour AND x.received_at < h.hour + interval '1 hour'
      AND x.received_at <= @now::timestamptz
      AND x.provider_id = p.id AND x.status BETWEEN 200 AND 299 AND x.replay_of IS NULL
    ORDER BY x.received_at DESC LIMIT 1
) d ON true
ORDER BY p.tenant_id, p.name`

func init() {
	measures(alerting.ProviderSilent, measurement{sql: providerSilentSQL, scan: scanSilent})
}

// scanSilent reads a provider's creation as Since and its last
// authenticated delivery as Last.
func scanSilent(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var window int64
	var last *time.Time
	if err := row.Scan(&r.TenantID, &r.Provider, &r.Threshold, &window, &r.Since, &last); err != nil {
		return r, err
	}
	r.Subject, r.Window = r.Provider, seconds(window)
	if last != nil {
		r.Last = *last
	}
	return r, nil
}
