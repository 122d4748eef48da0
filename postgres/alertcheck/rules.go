package alertcheck

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Each rule's statement measures every subject of tenant @tenant_id when
// its rule is enabled, as of @now (the evaluation's time, not the database's), and
// answers one row per subject with the tenant's setting of the rule
// (settingsSQL: the stored row, else the default passed as @enabled,
// @threshold and @window_seconds). Go decides whether the condition holds
// and writes the summary, so that durations read as everywhere else
// (time.Duration's String).

// settingsSQL is the tenant's effective setting of rule @rule. Every
// table of a rule's statement is filtered by @tenant_id, so that Citus
// sends the whole statement to the tenant's worker.
const settingsSQL = `settings AS (
    SELECT t.id AS tenant_id, t.slug, coalesce(r.threshold, @threshold::bigint) AS threshold,
           coalesce(r.window_seconds, @window_seconds::bigint) AS window_seconds,
           make_interval(secs => coalesce(r.window_seconds, @window_seconds::bigint)) AS window
    FROM tenants t
    LEFT JOIN alert_rules r ON r.tenant_id = @tenant_id AND r.rule = @rule::text
    WHERE t.id = @tenant_id AND coalesce(r.enabled, @enabled::boolean)
)`

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
JOIN providers p ON p.tenant_id = @tenant_id
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

// tenantsSQL lists the tenants an evaluation measures.
const tenantsSQL = `SELECT id FROM tenants ORDER BY id`

// rulesBatch queues rule statements, one tenant's at a time, on one
// pipelined batch, and collects their measures as the batch is read.
type rulesBatch struct {
	batch    pgx.Batch
	measures []alerting.Measure
}

// queue queues rule's statement sql for tenant with rule's default setting
// and args.
func (b *rulesBatch) queue(rule alerting.Rule, sql string, tenant int64, args pgx.NamedArgs,
	scan func(pgx.CollectableRow) (alerting.Measure, error)) {
	d := alerting.Default(rule)
	args["tenant_id"], args["rule"], args["enabled"], args["threshold"], args["window_seconds"] =
		tenant, string(rule), d.Enabled, d.Threshold, int64(d.Window/time.Second)
	b.batch.Queue(sql, args).Query(func(rows pgx.Rows) error {
		ms, err := pgx.CollectRows(rows, scan)
		for i := range ms {
			ms[i].Rule = rule
		}
		b.measures = append(b.measures, ms...)
		return err
	})
}

// send runs the batch in tx and returns every measure.
func (b *rulesBatch) send(ctx context.Context, tx pgx.Tx) ([]alerting.Measure, error) {
	if b.batch.Len() == 0 {
		return nil, nil
	}
	err := tx.SendBatch(ctx, &b.batch).Close()
	return b.measures, pg.Translate(err)
}

// queueRules queues every rule's statement for each of tenants.
func (b *rulesBatch) queueRules(now time.Time, tenants []int64) {
	for _, t := range tenants {
		for _, r := range []struct {
			rule alerting.Rule
			sql  string
			scan func(pgx.CollectableRow, time.Time) (alerting.Measure, error)
		}{
			{alerting.ProviderSilent, providerSilentSQL, scanSilent},
			{alerting.Refusals, refusalsSQL, scanRefusals},
			{alerting.ConflictsOpen, conflictsOpenSQL, scanConflicts},
			{alerting.DestinationFailing, destinationFailingSQL, scanDestination},
			{alerting.Reconciliation, reconciliationSQL, scanReconciliation},
		} {
			b.queue(r.rule, r.sql, t, pgx.NamedArgs{"now": now, "attempts_looked": attemptsLooked, "report_tenant": reportTenant},
				func(row pgx.CollectableRow) (alerting.Measure, error) { return r.scan(row, now) })
		}
	}
}

func setting(m *alerting.Measure, windowSeconds int64) {
	m.Window = time.Duration(windowSeconds) * time.Second
}

// scanSilent: silent for the window since the later of the provider's
// creation and its last authenticated delivery; Value is the silence in
// seconds.
func scanSilent(row pgx.CollectableRow, now time.Time) (alerting.Measure, error) {
	var m alerting.Measure
	var window int64
	var created time.Time
	var last *time.Time
	if err := row.Scan(&m.TenantID, &m.Provider, &m.Threshold, &window, &created, &last); err != nil {
		return m, err
	}
	setting(&m, window)
	since := created
	if last != nil && last.After(since) {
		since = *last
	}
	silence := max(now.Sub(since), 0)
	m.Subject, m.Value, m.Holds = m.Provider, int64(silence/time.Second), silence >= m.Window
	m.Summary = fmt.Sprintf("%s has sent no authenticated delivery for %s.", m.Provider, m.Window)
	if last == nil {
		m.Summary = fmt.Sprintf("%s has sent no authenticated delivery since it was connected %s ago.", m.Provider, silence.Round(time.Second))
	}
	return m, nil
}

func scanRefusals(row pgx.CollectableRow, _ time.Time) (alerting.Measure, error) {
	var m alerting.Measure
	var window int64
	if err := row.Scan(&m.TenantID, &m.Provider, &m.Threshold, &window, &m.Value); err != nil {
		return m, err
	}
	setting(&m, window)
	m.Subject, m.Holds = m.Provider, m.Value >= m.Threshold
	m.Summary = fmt.Sprintf("%d refused deliveries from %s in %s (threshold %d).", m.Value, m.Provider, m.Window, m.Threshold)
	return m, nil
}

func scanConflicts(row pgx.CollectableRow, _ time.Time) (alerting.Measure, error) {
	var m alerting.Measure
	var window, recent int64
	if err := row.Scan(&m.TenantID, &m.Threshold, &window, &m.Value, &recent); err != nil {
		return m, err
	}
	setting(&m, window)
	m.Holds = m.Value >= m.Threshold || recent >= m.Threshold
	m.Summary = fmt.Sprintf("%d revision conflicts are open (threshold %d), %d of them detected in the last %s.",
		m.Value, m.Threshold, recent, m.Window)
	if m.Value == 1 {
		m.Summary = fmt.Sprintf("1 revision conflict is open (threshold %d), %d detected in the last %s.", m.Threshold, recent, m.Window)
	}
	return m, nil
}

// scanDestination: paused as failing by the sender, or active with
// attempts within the window, none of them 2xx, and no 2xx for the
// window; Value is the failed attempts within the window. Every member,
// every token, the log and the alert destinations read the summary: it
// names the destination by its redacted target (its URL is its owners'),
// and of its status reason only which message has not been delivered
// since when, not the receiver's answer or the error.
func scanDestination(row pgx.CollectableRow, now time.Time) (alerting.Measure, error) {
	var m alerting.Measure
	var id, window, attempts, successes int64
	var d stream.Destination
	var status, reason string
	var behind bool
	var since time.Time
	if err := row.Scan(&m.TenantID, &id, &d.URL, &d.NATSURL, &d.Subject, &d.Format, &status, &reason, &behind,
		&m.Threshold, &window, &since, &attempts, &successes); err != nil {
		return m, err
	}
	setting(&m, window)
	m.Subject, m.Value = strconv.FormatInt(id, 10), attempts-successes
	target := d.RedactedTarget()
	switch {
	case status == "failing":
		m.Holds = true
		// postgres/outbound writes "change N has not been delivered since
		// T: error"; T has no ": ".
		undelivered, _, _ := strings.Cut(reason, ": ")
		m.Summary = fmt.Sprintf("Destination %d (%s) was paused as failing: %s.", id, target, strings.TrimRight(undelivered, "."))
		if reason == "" {
			m.Summary = fmt.Sprintf("Destination %d (%s) was paused as failing.", id, target)
		}
		if behind {
			m.Summary += " It is behind retention: changes it had not taken were removed from the feed and will not be sent."
		}
	default:
		m.Holds = attempts > 0 && successes == 0 && !since.After(now.Add(-m.Window))
		m.Summary = fmt.Sprintf("Destination %d (%s) has answered no attempt with a 2xx for %s (%d failed attempts).",
			id, target, m.Window, m.Value)
	}
	return m, nil
}

func scanReconciliation(row pgx.CollectableRow, _ time.Time) (alerting.Measure, error) {
	var m alerting.Measure
	var window int64
	if err := row.Scan(&m.TenantID, &m.Threshold, &window, &m.Value); err != nil {
		return m, err
	}
	setting(&m, window)
	m.Holds = m.Value >= m.Threshold
	m.Summary = fmt.Sprintf("The last reconciliation found %d violations in this tenant (see tidemark audit).", m.Value)
	if m.Value == 1 {
		m.Summary = "The last reconciliation found 1 violation in this tenant (see tidemark audit)."
	}
	return m, nil
}
