package alertcheck

import (
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// destinationFailingSQL measures each destination that is not paused by
// an owner: its status, since when it has had no 2xx (its last success,
// else its creation), and its attempts within the window among its last
// attemptsLooked; with what names it (scanDestination redacts the URL).
const destinationFailingSQL = `
WITH ` + settingsSQL + `
SELECT d.tenant_id, d.id, coalesce(d.url, ''), coalesce(d.nats_url, ''), coalesce(d.subject, ''), d.format,
       d.status, coalesce(d.status_reason, ''), ` + pg.BehindRetentionOfTenantSQL + `,
       s.threshold, s.window_seconds, coalesce(d.last_success_at, d.created_at), a.attempts, a.successes
FROM settings s
JOIN destinations d ON d.tenant_id = @tenant_id AND d.status <> 'paused'
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE x.attempted_at > @now::timestamptz - s.window) AS attempts,
           count(*) FILTER (WHERE x.attempted_at > @now::timestamptz - s.window AND x.status BETWEEN 200 AND 299) AS successes
    FROM (SELECT x.attempted_at, x.status FROM destination_attempts x
          WHERE x.tenant_id = @tenant_id AND x.destination_id = d.id AND x.attempted_at <= @now::timestamptz
          ORDER BY x.id DESC LIMIT @attempts_looked) x
) a
ORDER BY d.tenant_id, d.id`

// attemptsLooked bounds the attempts of one destination an evaluation reads.
const attemptsLooked = 10000

func init() {
	measures(alerting.DestinationFailing, measurement{sql: destinationFailingSQL,
		args: pgx.NamedArgs{"attempts_looked": attemptsLooked}, scan: scanDestination})
}

// scanDestination reads a destination's attempts within the window as
// Count, those answered 2xx as Part, and names it by its redacted target:
// the URL is its owners'.
func scanDestination(row pgx.CollectableRow) (alerting.Reading, error) {
	var r alerting.Reading
	var id, window int64
	var d stream.Destination
	var status string
	if err := row.Scan(&r.TenantID, &id, &d.URL, &d.NATSURL, &d.Subject, &d.Format, &status, &r.Reason, &r.Behind,
		&r.Threshold, &window, &r.Since, &r.Count, &r.Part); err != nil {
		return r, err
	}
	r.Subject, r.Window = strconv.FormatInt(id, 10), seconds(window)
	r.Target, r.Failing = d.RedactedTarget(), status == stream.DestinationFailing
	return r, nil
}
