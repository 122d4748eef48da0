package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The stored reports of reconciliation runs: the nightly one of serve and
// `tidemark audit` across every tenant. A report covers every tenant and
// names each violation's tenant, so it is stored under tenant_id 0, "no
// tenant", as the audit log stores changes outside any tenant; each
// statement below filters by it.

// reconcileLockKey is the session advisory lock of the nightly run, so that
// one node runs it ("reconcil" in ASCII); it is not the maintenance lock,
// so that neither pass waits for the other.
const reconcileLockKey int64 = 0x7265636f6e63696c

// keptReports is how many reports are kept; older ones are deleted as a
// new one is stored (the statement does not see the row it inserts, hence
// the newest keptReports-1 of the others).
const keptReports = 30

const (
	reconcileTryLockSQL = `SELECT pg_try_advisory_lock(@key)`
	lastReportAtSQL     = `SELECT max(started_at) FROM reconciliation_reports WHERE tenant_id = @tenant_id`
	lastReportSQL       = `
SELECT started_at, finished_at, counts, violations FROM reconciliation_reports
WHERE tenant_id = @tenant_id ORDER BY started_at DESC, id DESC LIMIT 1`
	saveReportSQL = `
WITH saved AS (
    INSERT INTO reconciliation_reports (tenant_id, started_at, finished_at, counts, violations)
    VALUES (@tenant_id, @started_at, @finished_at, @counts, @violations)
    RETURNING id
)
DELETE FROM reconciliation_reports
WHERE tenant_id = @tenant_id AND id NOT IN (SELECT id FROM saved)
  AND id NOT IN (SELECT id FROM reconciliation_reports WHERE tenant_id = @tenant_id ORDER BY started_at DESC, id DESC LIMIT @kept - 1)`
)

// reportTenant is the tenant_id of reports of runs across every tenant.
const reportTenant = 0

// SaveReconciliation stores a report of a run across every tenant as the
// last report, keeping StoredViolations violations of each invariant. A
// report of one tenant is an EINVALID error: it would pass for the state of
// every tenant.
func (rc *Reconciler) SaveReconciliation(ctx context.Context, r reconciliation.Report) error {
	if r.Tenant != "" {
		return domain.Errorf(domain.EINVALID, "only a reconciliation of every tenant is stored, not one of tenant %s", r.Tenant)
	}
	return saveReport(ctx, rc.pool, r)
}

func saveReport(ctx context.Context, q pg.Querier, r reconciliation.Report) error {
	kept := make([]reconciliation.Violation, 0, len(r.Violations))
	shown := map[reconciliation.Invariant]int{}
	for _, v := range r.Violations {
		if shown[v.Invariant] < reconciliation.StoredViolations {
			shown[v.Invariant]++
			kept = append(kept, v)
		}
	}
	counts, err := json.Marshal(r.Counts)
	if err != nil {
		return err
	}
	violations, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, saveReportSQL, pgx.NamedArgs{"tenant_id": reportTenant, "started_at": r.StartedAt,
		"finished_at": r.FinishedAt, "counts": string(counts), "violations": string(violations), "kept": keptReports})
	return pg.Translate(err)
}

// LastReconciliation implements reconciliation.Service.
func (rc *Reconciler) LastReconciliation(ctx context.Context) (reconciliation.Report, error) {
	r := reconciliation.Report{Counts: map[reconciliation.Invariant]int64{}}
	var counts map[reconciliation.Invariant]int64
	err := rc.read.QueryRow(ctx, lastReportSQL, pgx.NamedArgs{"tenant_id": reportTenant}).
		Scan(&r.StartedAt, &r.FinishedAt, &counts, &r.Violations)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, pg.NotFound("no reconciliation has run yet")
	}
	if err != nil {
		return r, pg.Translate(err)
	}
	for _, i := range reconciliation.Invariants {
		r.Counts[i] = counts[i] // an invariant newer than the report counts 0
	}
	return r, nil
}

// ReconcileNightly runs the nightly reconciliation across every tenant and
// stores its report, when one is due (reconciliation.Due, from the
// last stored report) and no other process is running it: ran is false
// otherwise. The run holds a session advisory lock on a connection of its
// own for its whole length, so several serve processes take turns.
func (rc *Reconciler) ReconcileNightly(ctx context.Context, now time.Time) (r reconciliation.Report, ran bool, err error) {
	conn, err := rc.ownConn(ctx, "tidemark reconciliation")
	if err != nil {
		return r, false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var locked bool
	if err := conn.QueryRow(ctx, reconcileTryLockSQL, pgx.NamedArgs{"key": reconcileLockKey}).Scan(&locked); err != nil || !locked {
		return r, false, pg.Translate(err)
	}
	var last *time.Time
	if err := conn.QueryRow(ctx, lastReportAtSQL, pgx.NamedArgs{"tenant_id": reportTenant}).Scan(&last); err != nil {
		return r, false, pg.Translate(err)
	}
	if last != nil && !reconciliation.Due(*last, now) {
		return r, false, nil
	}
	r, err = reconcileOn(ctx, conn, 0, reconciliation.StoredViolations, now)
	if err == nil {
		err = saveReport(ctx, conn, r)
	}
	return r, true, err
}

// RunReconciliation implements reconciliation.Service: a run asked
// for by an admin, across every tenant, under the nightly run's lock so
// that two never overlap. The report and its audit entry are stored in one
// transaction.
func (rc *Reconciler) RunReconciliation(ctx context.Context) (reconciliation.Report, error) {
	var r reconciliation.Report
	if _, ok := domain.ActorFrom(ctx); !ok { // before the run rather than after it
		return r, domain.Errorf(domain.EINTERNAL, "a reconciliation run has no actor to record")
	}
	conn, err := rc.ownConn(ctx, "tidemark reconciliation")
	if err != nil {
		return r, err
	}
	defer conn.Close(context.WithoutCancel(ctx)) // and with it the lock
	var locked bool
	if err := conn.QueryRow(ctx, reconcileTryLockSQL, pgx.NamedArgs{"key": reconcileLockKey}).Scan(&locked); err != nil {
		return r, pg.Translate(err)
	}
	if !locked {
		return r, domain.Errorf(domain.ECONFLICT, "a reconciliation is already running; its report appears here when it ends")
	}
	if r, err = reconcileOn(ctx, conn, 0, reconciliation.StoredViolations, time.Now()); err != nil {
		return r, err
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := saveReport(ctx, tx, r); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, 0, domain.AuditReconciliationRun, "every workspace", r.Summary())
	})
	return r, pg.Translate(err)
}

var (
	auditViolationsDesc = prometheus.NewDesc("tidemark_audit_violations",
		"Violations found by the last stored reconciliation (tidemark audit, nightly in serve), by invariant.",
		[]string{"invariant"}, nil)
	auditLastRunDesc = prometheus.NewDesc("tidemark_audit_last_run_timestamp_seconds",
		"When the last stored reconciliation started, in seconds since the Unix epoch.", nil, nil)
)

// reconcileScrapeTimeout bounds the read of the last report on a scrape.
const reconcileScrapeTimeout = 2 * time.Second

// ReconciliationMetrics returns the collector of tidemark_audit_violations
// and tidemark_audit_last_run_timestamp_seconds. It reads the last stored
// report at every scrape, so that every node exports the same figures
// whichever ran the reconciliation; before any report, and while the
// database does not answer, it exports nothing.
func (rc *Reconciler) ReconciliationMetrics() prometheus.Collector { return reconcileCollector{rc} }

type reconcileCollector struct{ rc *Reconciler }

func (c reconcileCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- auditViolationsDesc
	ch <- auditLastRunDesc
}

func (c reconcileCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), reconcileScrapeTimeout)
	defer cancel()
	r, err := c.rc.LastReconciliation(ctx)
	if err != nil {
		if code := domain.ErrorCode(err); code != domain.ENOTFOUND && code != domain.EUNAVAILABLE {
			c.rc.log.Error("read the last reconciliation report for /metrics", "err", err)
		}
		return
	}
	for _, i := range reconciliation.Invariants {
		ch <- prometheus.MustNewConstMetric(auditViolationsDesc, prometheus.GaugeValue, float64(r.Counts[i]), string(i))
	}
	ch <- prometheus.MustNewConstMetric(auditLastRunDesc, prometheus.GaugeValue, float64(r.StartedAt.Unix()))
}
