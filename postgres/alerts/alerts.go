// Package alerts serves a tenant's alert rules and alert history
// (alerting.Service): the rules' settings, each owner's change audited in
// its transaction, and the alerts the evaluator fired and resolved, newest
// first, paged both ways. The evaluation itself is not here.
package alerts

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Rules serves the rules and the alerts of tenants; its reads use the
// read pool.
type Rules struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the alert rules and alerts of pools.
func New(pools pg.Pools) *Rules { return &Rules{pool: pools.Write, read: pools.ForReads()} }

var _ alerting.Service = (*Rules)(nil)

const rulesSQL = `
SELECT rule, enabled, threshold, window_seconds FROM alert_rules WHERE tenant_id = @tenant_id`

// AlertRules implements alerting.Service: every rule in alerting.Rules'
// order, its stored setting or its default. A stored row of a rule this
// version does not know is left out.
func (s *Rules) AlertRules(ctx context.Context, tenantID int64) ([]alerting.Config, error) {
	stored, err := rules(ctx, s.read, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]alerting.Config, len(alerting.Rules))
	for i, r := range alerting.Rules {
		out[i] = alerting.Default(r)
		if c, ok := stored[r]; ok {
			out[i] = c
		}
	}
	return out, nil
}

type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// rules reads the stored settings of a tenant with q, a pool or a
// transaction.
func rules(ctx context.Context, q querier, tenantID int64) (map[alerting.Rule]alerting.Config, error) {
	rows, err := q.Query(ctx, rulesSQL, pgx.NamedArgs{"tenant_id": tenantID})
	if err != nil {
		return nil, pg.Translate(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Config, error) {
		var (
			c       alerting.Config
			seconds int64
		)
		err := row.Scan(&c.Rule, &c.Enabled, &c.Threshold, &seconds)
		c.Window = time.Duration(seconds) * time.Second
		return c, err
	})
	if err != nil {
		return nil, pg.Translate(err)
	}
	out := make(map[alerting.Rule]alerting.Config, len(list))
	for _, c := range list {
		out[c.Rule] = c
	}
	return out, nil
}

// lockRuleSQL takes the tenant's row lock on its own rules (the tenant
// row), so two owners' changes of one rule are audited in the order they
// were made, each with what it changed from.
const lockRuleSQL = `SELECT id FROM tenants WHERE id = @tenant_id FOR NO KEY UPDATE`

const upsertRuleSQL = `
INSERT INTO alert_rules (tenant_id, rule, enabled, threshold, window_seconds, updated_at)
VALUES (@tenant_id, @rule, @enabled, @threshold, @window_seconds, now())
ON CONFLICT (tenant_id, rule) DO UPDATE
SET enabled = EXCLUDED.enabled, threshold = EXCLUDED.threshold, window_seconds = EXCLUDED.window_seconds,
    updated_at = EXCLUDED.updated_at`

// SetAlertRule implements alerting.Service. The window is stored to the
// second.
func (s *Rules) SetAlertRule(ctx context.Context, tenantID int64, c alerting.Config) (alerting.Config, error) {
	c.Window = c.Window.Truncate(time.Second)
	if err := alerting.Check(c); err != nil {
		return alerting.Config{}, err
	}
	err := pg.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, lockRuleSQL, pgx.NamedArgs{"tenant_id": tenantID}).Scan(&id); err != nil {
			return err
		}
		stored, err := rules(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		was, ok := stored[c.Rule]
		if !ok {
			was = alerting.Default(c.Rule)
		}
		if _, err := tx.Exec(ctx, upsertRuleSQL, pgx.NamedArgs{"tenant_id": tenantID, "rule": c.Rule, "enabled": c.Enabled,
			"threshold": c.Threshold, "window_seconds": int64(c.Window / time.Second)}); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, alerting.AuditRuleSet, alerting.RuleLabel(c.Rule),
			fmt.Sprintf("%s (was %s)", alerting.Describe(c), alerting.Describe(was)))
	})
	if err != nil {
		return alerting.Config{}, pg.Translate(err)
	}
	return c, nil
}

// alertColumns are an alert as scanAlert reads it.
const alertColumns = `a.id, a.rule, a.provider, a.subject, a.summary, coalesce(a.resolved_value, a.value), a.threshold,
       a.window_seconds, a.started_at, a.resolved_at`

func scanAlert(row pgx.Row) (alerting.Alert, error) {
	var (
		a       alerting.Alert
		seconds int64
	)
	err := row.Scan(&a.ID, &a.Rule, &a.Provider, &a.Subject, &a.Summary, &a.Value, &a.Threshold, &seconds,
		&a.StartedAt, &a.ResolvedAt)
	a.Window = time.Duration(seconds) * time.Second
	return a, err
}

// alertsSQL pages through a tenant's alerts newest first from
// (@after_at, @after_id); %s is the state's condition, if any.
const alertsSQL = `
SELECT ` + alertColumns + `
FROM alerts a
WHERE a.tenant_id = @tenant_id AND (a.started_at, a.id) < (@after_at, @after_id)%s
ORDER BY a.started_at DESC, a.id DESC
LIMIT @limit`

// The state conditions of alertsSQL.
var stateConds = map[alerting.State]string{
	"":                "",
	alerting.Firing:   "\n  AND a.resolved_at IS NULL",
	alerting.Resolved: "\n  AND a.resolved_at IS NOT NULL",
}

type alertCursor struct {
	At time.Time `json:"t"`
	ID int64     `json:"i"`
}

// Alerts implements alerting.Service.
func (s *Rules) Alerts(ctx context.Context, tenantID int64, state alerting.State, page domain.Page) ([]alerting.Alert, domain.PageCursors, error) {
	cond, ok := stateConds[state]
	if !ok {
		return nil, domain.PageCursors{}, domain.Errorf(domain.EINVALID, "state must be firing or resolved, not %q", state)
	}
	sql := fmt.Sprintf(alertsSQL, cond)
	keyed, info, err := pg.Both(page, func(after alertCursor, start, newer bool, limit int) ([]pg.Keyed[alerting.Alert, alertCursor], error) {
		args := pgx.NamedArgs{"tenant_id": tenantID, "limit": limit + 1, "after_at": any(after.At), "after_id": after.ID}
		if !start {
			args["after_at"], args["after_id"] = pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, int64(math.MaxInt64)
		} else if after.At.IsZero() {
			return nil, pg.InvalidCursor()
		}
		q := sql
		if newer {
			q = pg.Ascending(sql)
		}
		rows, err := s.read.Query(ctx, q, args)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (pg.Keyed[alerting.Alert, alertCursor], error) {
			a, err := scanAlert(row)
			return pg.Keyed[alerting.Alert, alertCursor]{Row: a, Key: alertCursor{At: a.StartedAt, ID: a.ID}}, err
		})
	})
	if err != nil {
		return nil, domain.PageCursors{}, pg.Translate(err)
	}
	return pg.Rows(keyed), info.PageCursors, nil
}

// firingSQL reads the alerts firing now by the partial unique index of
// firing alerts: the banner's query on every page of a workspace.
const firingSQL = `
SELECT ` + alertColumns + `
FROM alerts a
WHERE a.tenant_id = @tenant_id AND a.resolved_at IS NULL
ORDER BY a.started_at DESC, a.id DESC
LIMIT @limit`

// firingBound caps the banner's list: a tenant with more alerts firing
// sees the first of them and the alerts page for the rest.
const firingBound = 100

// FiringAlerts implements alerting.Service, newest first.
func (s *Rules) FiringAlerts(ctx context.Context, tenantID int64) ([]alerting.Alert, error) {
	rows, err := s.read.Query(ctx, firingSQL, pgx.NamedArgs{"tenant_id": tenantID, "limit": firingBound})
	if err != nil {
		return nil, pg.Translate(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (alerting.Alert, error) { return scanAlert(row) })
	return list, pg.Translate(err)
}
