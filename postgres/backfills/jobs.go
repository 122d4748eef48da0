// Package backfills keeps backfill jobs (domain/pull): operators and the
// sweep queue them, serve's nodes claim, report on and finish them. It
// also answers which fields a provider's snapshots carry (fields.go). The
// pulling itself is internal/backfill's, through the ingest write path.
package backfills

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Keeper keeps the backfill jobs on pool; the console's and the API's
// reads use the read pool.
type Keeper struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the jobs on pools.
func New(pools pg.Pools) *Keeper { return &Keeper{pool: pools.Write, read: pools.ForReads()} }

var (
	_ pull.JobStore       = (*Keeper)(nil)
	_ pull.JobRunnerStore = (*Keeper)(nil)
)

// sweepActor is the created_by of the sweep's jobs.
const sweepActor = "sweep"

// jobColumns are a job's columns as scanJob reads them.
const jobColumns = `j.id, j.tenant_id, (SELECT slug FROM tenants WHERE id = j.tenant_id), j.provider_id,
       (SELECT name FROM providers WHERE tenant_id = j.tenant_id AND id = j.provider_id), j.sweep, j.from_at, j.to_at,
       j.object_type, j.state, j.deliveries, j.events, j.missed, j.outcomes, j.error, j.cancel_requested,
       j.created_by, j.created_at, j.started_at, j.finished_at, j.pages, j.run_ms, j.resume_type, j.resume_from, j.span_ms`

func scanJob(row pgx.CollectableRow) (pull.Job, error) {
	var (
		j                 pull.Job
		started, finished pgtype.Timestamptz
		resumeFrom        pgtype.Timestamptz
		runMS, spanMS     int64
	)
	err := row.Scan(&j.ID, &j.TenantID, &j.TenantSlug, &j.ProviderID, &j.Provider, &j.Sweep, &j.From, &j.To,
		&j.ObjectType, &j.State, &j.Deliveries, &j.Events, &j.Missed, &j.Outcomes, &j.Error, &j.CancelRequested,
		&j.CreatedBy, &j.CreatedAt, &started, &finished, &j.Pages, &runMS, &j.At.ObjectType, &resumeFrom, &spanMS)
	j.StartedAt, j.FinishedAt, j.At.From = started.Time, finished.Time, resumeFrom.Time
	j.RanFor, j.At.Span = time.Duration(runMS)*time.Millisecond, time.Duration(spanMS)*time.Millisecond
	return j, err
}

// collectJob reads the one job of rows; notFound when there is none.
func collectJob(rows pgx.Rows, err error, notFound func() error) (pull.Job, error) {
	if err != nil {
		return pull.Job{}, pg.Translate(err)
	}
	job, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return job, notFound()
	}
	return job, pg.Translate(err)
}

// writeThenRead runs a statement that writes one job and returns its id,
// then reads the job whole; notFound when it wrote none. Two statements:
// a job's columns name its tenant and provider, and Citus cannot read
// other tables in a RETURNING list.
func writeThenRead(ctx context.Context, tx pgx.Tx, sql string, args pgx.NamedArgs, notFound func() error) (pull.Job, error) {
	var id int64
	err := tx.QueryRow(ctx, sql, args).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return pull.Job{}, notFound()
	}
	if err != nil {
		return pull.Job{}, pg.Translate(err)
	}
	rows, err := tx.Query(ctx, backfillSQL, pgx.NamedArgs{"tenant_id": args["tenant_id"], "job_id": id})
	return collectJob(rows, err, jobNotFound(id))
}

func jobTarget(id int64) string { return fmt.Sprintf("backfill job %d", id) }

func jobNotFound(id int64) func() error {
	return func() error { return pg.NotFound("backfill job %d not found", id) }
}

// startBackfillSQL queues a job of a provider of the tenant: no row when
// the tenant has no such provider. backfill_jobs_one_sweep refuses a
// second sweep of the provider while one is queued or running,
// backfill_jobs_one_manual a second job started by an operator.
const startBackfillSQL = `
INSERT INTO backfill_jobs AS j (tenant_id, provider_id, sweep, from_at, to_at, object_type, created_by)
SELECT p.tenant_id, p.id, @sweep, @from_at, @to_at, @object_type, @created_by
FROM providers p WHERE p.tenant_id = @tenant_id AND p.id = @provider_id
RETURNING j.id`

// StartBackfill implements pull.JobStore. A window that is empty, or wider
// than pull.MaxSince, is EINVALID; an unknown provider ENOTFOUND; a sweep
// while the provider's previous one is queued or running ECONFLICT, and so
// is an operator's job while another operator's job is. A job
// an operator starts needs the actor of ctx, recorded as its creator and
// in the audit log.
func (k *Keeper) StartBackfill(ctx context.Context, tenantID, providerID int64, from, to time.Time, objectType string, sweep bool) (pull.Job, error) {
	if !from.Before(to) || to.Sub(from) > pull.MaxSince {
		return pull.Job{}, domain.Errorf(domain.EINVALID, "a backfill pulls a window of more than 0 and at most 90 days, not %s to %s",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	createdBy := sweepActor
	if !sweep {
		actor, ok := domain.ActorFrom(ctx)
		if !ok {
			return pull.Job{}, domain.Errorf(domain.EINTERNAL, "a backfill job needs an actor who starts it")
		}
		createdBy = actor.Name
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "sweep": sweep, "from_at": from, "to_at": to,
		"object_type": objectType, "created_by": createdBy}
	var job pull.Job
	err := pg.WithTx(ctx, k.pool, func(tx pgx.Tx) error {
		var err error
		job, err = writeThenRead(ctx, tx, startBackfillSQL, args, func() error { return pg.NotFound("provider %d not found", providerID) })
		if err != nil || sweep {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, pull.AuditBackfillStart, jobTarget(job.ID), jobWindow(job))
	})
	switch {
	case pg.UniqueViolation(err) && sweep:
		return job, domain.Errorf(domain.ECONFLICT, "a sweep of provider %d is still queued or running", providerID)
	case pg.UniqueViolation(err):
		return job, k.activeManual(ctx, tenantID, providerID)
	}
	return job, pg.Translate(err)
}

const activeManualSQL = `
SELECT j.id, j.state, (SELECT name FROM providers WHERE tenant_id = j.tenant_id AND id = j.provider_id)
FROM backfill_jobs j WHERE j.tenant_id = @tenant_id AND j.provider_id = @provider_id AND NOT j.sweep
AND j.state IN ('queued', 'running')`

// activeManual is the refusal of a second job of a provider started by an
// operator: ECONFLICT naming the job that is queued or running.
func (k *Keeper) activeManual(ctx context.Context, tenantID, providerID int64) error {
	var (
		id       int64
		state    string
		provider string
	)
	err := k.pool.QueryRow(ctx, activeManualSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID}).Scan(&id, &state, &provider)
	if err != nil {
		// It ended meanwhile: the refusal stands, without its id.
		return domain.Errorf(domain.ECONFLICT, "a backfill of this provider is already queued or running: try again in a moment")
	}
	return domain.Errorf(domain.ECONFLICT, "backfill job %d of provider %s is already %s: a provider has one backfill "+
		"queued or running at a time; wait for it to end, or cancel it first", id, provider, state)
}

// jobWindow says what a job pulls, for the audit log.
func jobWindow(j pull.Job) string {
	what := "every object type"
	if j.ObjectType != "" {
		what = j.ObjectType
	}
	return fmt.Sprintf("%s, %s, changes from %s to %s", j.Provider, what,
		j.From.UTC().Format(time.RFC3339), j.To.UTC().Format(time.RFC3339))
}

const backfillSQL = `SELECT ` + jobColumns + ` FROM backfill_jobs j WHERE j.tenant_id = @tenant_id AND j.id = @job_id`

// Backfill implements pull.JobStore, on the read pool.
func (k *Keeper) Backfill(ctx context.Context, tenantID, id int64) (pull.Job, error) {
	rows, err := k.read.Query(ctx, backfillSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": id})
	return collectJob(rows, err, jobNotFound(id))
}

const backfillsSQL = `
SELECT ` + jobColumns + ` FROM backfill_jobs j WHERE j.tenant_id = @tenant_id AND j.provider_id = @provider_id
ORDER BY j.id DESC LIMIT @limit`

// Backfills implements pull.JobStore, on the read pool.
func (k *Keeper) Backfills(ctx context.Context, tenantID, providerID int64, limit int) ([]pull.Job, error) {
	rows, err := k.read.Query(ctx, backfillsSQL, pgx.NamedArgs{"tenant_id": tenantID, "provider_id": providerID, "limit": limit})
	if err != nil {
		return nil, pg.Translate(err)
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	return jobs, pg.Translate(err)
}

// cancelBackfillSQL ends a queued job at once and asks a running one to
// stop; its node sees the request at its next report. A claim that
// already holds the row makes it wait, then it sees the job running.
const cancelBackfillSQL = `
UPDATE backfill_jobs j SET cancel_requested = true,
    state = CASE WHEN j.state = 'queued' THEN 'cancelled' ELSE j.state END,
    finished_at = CASE WHEN j.state = 'queued' THEN @now::timestamptz ELSE j.finished_at END
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.state IN ('queued', 'running')
RETURNING j.id`

// CancelBackfill implements pull.JobStore: ENOTFOUND for a job the tenant
// does not have, ECONFLICT for one that ended.
func (k *Keeper) CancelBackfill(ctx context.Context, tenantID, id int64) (pull.Job, error) {
	var job pull.Job
	err := pg.WithTx(ctx, k.pool, func(tx pgx.Tx) error {
		now, err := pg.Now(ctx, tx)
		if err != nil {
			return err
		}
		job, err = writeThenRead(ctx, tx, cancelBackfillSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": id, "now": now},
			func() error { return k.notActive(ctx, tenantID, id) })
		if err != nil {
			return err
		}
		summary := "cancelled while queued"
		if job.State == pull.Running {
			summary = fmt.Sprintf("asked to stop while running, after %d events", job.Events)
		}
		return pg.Audit(ctx, tx, tenantID, pull.AuditBackfillCancel, jobTarget(id), summary)
	})
	return job, pg.Translate(err)
}

// notActive explains why a job could not be cancelled: it does not exist,
// or it has ended.
func (k *Keeper) notActive(ctx context.Context, tenantID, id int64) error {
	rows, err := k.pool.Query(ctx, backfillSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": id})
	job, err := collectJob(rows, err, jobNotFound(id))
	if err != nil {
		return err
	}
	return domain.Errorf(domain.ECONFLICT, "backfill job %d has already ended (%s)", id, job.State)
}
