// Package alertcheck evaluates the built-in alert rules (domain/alerting)
// of every tenant: it measures each rule's condition (rules.go, and one
// rule_<name>.go per rule), fires an alert for each new finding and
// resolves each firing alert whose finding is gone, in one transaction, on
// one node at a time; and it exports the firing alerts to Prometheus
// (metrics.go).
package alertcheck

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Evaluations evaluates the rules on pool and reads the firing alerts for
// /metrics on the read pool.
type Evaluations struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the Evaluations of pools.
func New(pools pg.Pools) *Evaluations { return &Evaluations{pool: pools.Write, read: pools.ForReads()} }

// evaluationLockKey is the session advisory lock an evaluation holds, so
// that one node at a time evaluates ("tdmalert" in ASCII).
const evaluationLockKey int64 = 0x74646d616c657274

// evaluationTimeout bounds each statement of an evaluation: a slow one
// fails this evaluation, and the next one, 30 s later, tries again.
const evaluationTimeout = "20s"

const (
	tryEvaluationLockSQL = `SELECT pg_try_advisory_lock(@key)`
	unlockEvaluationSQL  = `SELECT pg_advisory_unlock(@key)`
	evaluationTimeoutSQL = `SELECT set_config('statement_timeout', @timeout, true)`

	// firingSQL reads every firing alert of every tenant. No row lock:
	// the evaluation, which alone writes alerts, runs under the advisory
	// lock, and Citus locks no rows across shards.
	firingSQL = `
SELECT tenant_id, id, rule, provider, subject, summary, value, threshold, window_seconds, started_at
FROM alerts WHERE resolved_at IS NULL
ORDER BY tenant_id, id`

	// resolveSQL resolves alerts with the value measured at resolution and
	// records each resolution.
	resolveSQL = `
WITH resolved AS (
    UPDATE alerts a SET resolved_at = @now::timestamptz, resolved_value = r.value
    FROM unnest(@tenants::bigint[], @ids::bigint[], @values::bigint[]) AS r (tenant_id, id, value)
    WHERE a.tenant_id = r.tenant_id AND a.id = r.id AND a.resolved_at IS NULL
    RETURNING a.tenant_id, a.id
), recorded AS (
    INSERT INTO alert_events (tenant_id, alert_id, type, at)
    SELECT tenant_id, id, 'alert.resolved', @now::timestamptz FROM resolved ORDER BY tenant_id, id
)
SELECT tenant_id, id FROM resolved`

	// fireSQL fires alerts and records each firing. A subject with an
	// alert firing already (which the advisory lock rules out) keeps it.
	fireSQL = `
WITH fired AS (
    INSERT INTO alerts (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, started_at)
    SELECT f.tenant_id, f.rule, f.provider, f.subject, f.summary, f.value, f.threshold, f.window_seconds, @now::timestamptz
    FROM unnest(@tenants::bigint[], @rules::text[], @providers::text[], @subjects::text[], @summaries::text[],
                @values::bigint[], @thresholds::bigint[], @windows::bigint[])
        WITH ORDINALITY AS f (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, n)
    ORDER BY f.n
    ON CONFLICT (tenant_id, rule, subject) WHERE resolved_at IS NULL DO NOTHING
    RETURNING tenant_id, id, rule, subject
), recorded AS (
    INSERT INTO alert_events (tenant_id, alert_id, type, at)
    SELECT tenant_id, id, 'alert.fired', @now::timestamptz FROM fired ORDER BY tenant_id, id
)
SELECT tenant_id, id, rule, subject FROM fired`
)

// key is an alert's identity while it fires.
type key struct {
	tenant  int64
	rule    alerting.Rule
	subject string
}

// EvaluateAlerts implements alerting.Evaluator: it measures every rule of
// every tenant as of now and fires and resolves alerts accordingly, in one
// transaction on a pooled connection that holds a session advisory lock
// for the evaluation. When another node holds the lock it does nothing
// and answers Ran false.
func (c *Evaluations) EvaluateAlerts(ctx context.Context, now time.Time, queue alerting.QueueFacts) (alerting.Evaluation, error) {
	ev := alerting.Evaluation{At: now}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return ev, pg.Translate(err)
	}
	defer conn.Release()
	lock := pgx.NamedArgs{"key": evaluationLockKey}
	if err := conn.QueryRow(ctx, tryEvaluationLockSQL, lock).Scan(&ev.Ran); err != nil || !ev.Ran {
		return ev, pg.Translate(err)
	}
	defer func() {
		// A connection that cannot unlock is closed, which releases the lock.
		if _, err := conn.Exec(context.WithoutCancel(ctx), unlockEvaluationSQL, lock); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return ev, pg.Translate(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := evaluate(ctx, tx, now, queue, &ev); err != nil {
		return ev, err
	}
	return ev, pg.Translate(tx.Commit(ctx))
}

// evaluate does an evaluation's work in tx.
func evaluate(ctx context.Context, tx pgx.Tx, now time.Time, queue alerting.QueueFacts, ev *alerting.Evaluation) error {
	if _, err := tx.Exec(ctx, evaluationTimeoutSQL, pgx.NamedArgs{"timeout": evaluationTimeout}); err != nil {
		return pg.Translate(err)
	}
	firing, err := firingAlerts(ctx, tx)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, tenantsSQL)
	if err != nil {
		return pg.Translate(err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return pg.Translate(err)
	}
	var b rulesBatch
	b.queueRules(now, tenants)
	if queue.Known {
		b.queueFacts(now, queue.Tenants)
	}
	measures, err := b.send(ctx, tx)
	if err != nil {
		return err
	}
	measured := map[key]alerting.Measure{}
	var fire []alerting.Measure
	for _, m := range measures {
		k := key{m.TenantID, m.Rule, m.Subject}
		measured[k] = m
		if !m.Holds {
			continue
		}
		ev.Findings++
		if _, ok := firing[k]; !ok {
			fire = append(fire, m)
		}
	}
	var gone []alerting.Change
	for k, a := range firing {
		if m, ok := measured[k]; ok && m.Holds {
			continue
		}
		if d, _ := alerting.Lookup(k.rule); !queue.Known && d.Queued {
			continue // the stream could not be read: nothing is known of them
		}
		// The value at resolution is the measure's; without one (a disabled
		// rule, a deleted subject), the value it fired with.
		if m, ok := measured[k]; ok {
			a.Alert.Value = m.Value
		}
		gone = append(gone, a)
	}
	if ev.Resolved, err = resolve(ctx, tx, now, gone); err != nil {
		return err
	}
	ev.Fired, err = fireAlerts(ctx, tx, now, fire)
	return err
}

func firingAlerts(ctx context.Context, tx pgx.Tx) (map[key]alerting.Change, error) {
	rows, err := tx.Query(ctx, firingSQL)
	if err != nil {
		return nil, pg.Translate(err)
	}
	alerts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Change, error) {
		var c alerting.Change
		var window int64
		err := row.Scan(&c.TenantID, &c.Alert.ID, &c.Alert.Rule, &c.Alert.Provider, &c.Alert.Subject, &c.Alert.Summary,
			&c.Alert.Value, &c.Alert.Threshold, &window, &c.Alert.StartedAt)
		c.Alert.Window = time.Duration(window) * time.Second
		return c, err
	})
	if err != nil {
		return nil, pg.Translate(err)
	}
	firing := make(map[key]alerting.Change, len(alerts))
	for _, a := range alerts {
		firing[key{a.TenantID, a.Alert.Rule, a.Alert.Subject}] = a
	}
	return firing, nil
}

// resolve resolves gone and answers what it resolved, in the order of
// their ids.
func resolve(ctx context.Context, tx pgx.Tx, now time.Time, gone []alerting.Change) ([]alerting.Change, error) {
	if len(gone) == 0 {
		return nil, nil
	}
	tenants, ids, values := make([]int64, len(gone)), make([]int64, len(gone)), make([]int64, len(gone))
	byID := map[int64]alerting.Change{}
	for i, a := range gone {
		tenants[i], ids[i], values[i] = a.TenantID, a.Alert.ID, a.Alert.Value
		byID[a.Alert.ID] = a
	}
	rows, err := tx.Query(ctx, resolveSQL, pgx.NamedArgs{"now": now, "tenants": tenants, "ids": ids, "values": values})
	if err != nil {
		return nil, pg.Translate(err)
	}
	resolved, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Change, error) {
		var tenant, id int64
		err := row.Scan(&tenant, &id)
		a := byID[id]
		at := now
		a.Alert.ResolvedAt = &at
		return a, err
	})
	return sorted(resolved), pg.Translate(err)
}

// fireAlerts fires an alert for each finding and answers what it fired.
func fireAlerts(ctx context.Context, tx pgx.Tx, now time.Time, fire []alerting.Measure) ([]alerting.Change, error) {
	if len(fire) == 0 {
		return nil, nil
	}
	n := len(fire)
	tenants, values, thresholds, windows := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	rules, providers, subjects, summaries := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	byKey := map[key]alerting.Measure{}
	for i, m := range fire {
		tenants[i], rules[i], providers[i], subjects[i], summaries[i] = m.TenantID, string(m.Rule), m.Provider, m.Subject, m.Summary
		values[i], thresholds[i], windows[i] = m.Value, m.Threshold, int64(m.Window/time.Second)
		byKey[key{m.TenantID, m.Rule, m.Subject}] = m
	}
	rows, err := tx.Query(ctx, fireSQL, pgx.NamedArgs{"now": now, "tenants": tenants, "rules": rules, "providers": providers,
		"subjects": subjects, "summaries": summaries, "values": values, "thresholds": thresholds, "windows": windows})
	if err != nil {
		return nil, pg.Translate(err)
	}
	fired, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Change, error) {
		var k key
		var id int64
		err := row.Scan(&k.tenant, &id, &k.rule, &k.subject)
		m := byKey[k]
		return alerting.Change{TenantID: k.tenant, Alert: alerting.Alert{ID: id, Rule: m.Rule, Provider: m.Provider,
			Subject: m.Subject, Summary: m.Summary, Value: m.Value, Threshold: m.Threshold, Window: m.Window, StartedAt: now}}, err
	})
	return sorted(fired), pg.Translate(err)
}

// sorted orders changes by tenant and alert id.
func sorted(cs []alerting.Change) []alerting.Change {
	slices.SortFunc(cs, func(a, b alerting.Change) int {
		return cmp.Or(cmp.Compare(a.TenantID, b.TenantID), cmp.Compare(a.Alert.ID, b.Alert.ID))
	})
	return cs
}
