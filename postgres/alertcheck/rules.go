package alertcheck

import (
	"context"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Each rule (domain/alerting) has its measurement here, in
// rule_<name>.go: a statement that measures every subject of tenant
// @tenant_id when its rule is enabled, as of @now (the evaluation's time,
// not the database's), and answers one row per subject with the tenant's
// setting of the rule (settingsSQL: the stored row, else the default
// passed as @enabled, @threshold and @window_seconds); and the scan of a
// row into an alerting.Reading. The rule's definition decides whether its
// condition holds and writes the summary, so that durations read as
// everywhere else (time.Duration's String).

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

// tenantsSQL lists the tenants an evaluation measures.
const tenantsSQL = `SELECT id FROM tenants ORDER BY id`

// measurement is how a rule is measured.
type measurement struct {
	sql string
	// args are the statement's arguments beside @now, @tenant_id and the
	// setting's.
	args pgx.NamedArgs
	// fromFacts gives, for a rule of queued mode's stream
	// (alerting.Def.Queued), the statement's arguments from a tenant's
	// facts; ok is false when they hold nothing to measure.
	fromFacts func(alerting.QueueFact) (args pgx.NamedArgs, ok bool)
	scan      func(pgx.CollectableRow) (alerting.Reading, error)
}

// measurements are the rules' measurements by rule, each registered from
// its file's init.
var measurements = map[alerting.Rule]measurement{}

func measures(r alerting.Rule, m measurement) { measurements[r] = m }

// seconds is a window stored in seconds.
func seconds(s int64) time.Duration { return time.Duration(s) * time.Second }

// rulesBatch queues rule statements, one tenant's at a time, on one
// pipelined batch, and collects their measures as the batch is read.
type rulesBatch struct {
	batch    pgx.Batch
	measures []alerting.Measure
}

// queue queues rule d's statement for tenant as of now with d's default
// setting, its measurement's args and args.
func (b *rulesBatch) queue(d alerting.Def, now time.Time, tenant int64, args pgx.NamedArgs) {
	m := measurements[d.Rule]
	all := pgx.NamedArgs{"now": now, "tenant_id": tenant, "rule": string(d.Rule), "enabled": d.Default().Enabled,
		"threshold": d.Threshold, "window_seconds": int64(d.Window / time.Second)}
	maps.Copy(all, m.args)
	maps.Copy(all, args)
	b.batch.Queue(m.sql, all).Query(func(rows pgx.Rows) error {
		rs, err := pgx.CollectRows(rows, m.scan)
		for _, r := range rs {
			r.Now = now
			b.measures = append(b.measures, d.Measure(r))
		}
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

// queueRules queues the statement of every rule but the queue rules for
// each of tenants.
func (b *rulesBatch) queueRules(now time.Time, tenants []int64) {
	defs := alerting.Defs()
	for _, t := range tenants {
		for _, d := range defs {
			if !d.Queued {
				b.queue(d, now, t, nil)
			}
		}
	}
}

// The queue rules measure what queued mode's stream said (alerting.
// QueueFacts, read by the evaluating node before its transaction), with
// each tenant's setting, one statement per tenant the facts name. A tenant
// they do not name has nothing queued and no dead letter: it is not
// measured, so its alert resolves.

// queueFacts queues the queue rules' statements for the tenants of facts.
func (b *rulesBatch) queueFacts(now time.Time, facts []alerting.QueueFact) {
	defs := alerting.Defs()
	for _, f := range facts {
		for _, d := range defs {
			if !d.Queued {
				continue
			}
			if args, ok := measurements[d.Rule].fromFacts(f); ok {
				b.queue(d, now, f.TenantID, args)
			}
		}
	}
}
