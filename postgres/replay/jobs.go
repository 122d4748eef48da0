// Package replay is the queue of bulk replay jobs: starting, claiming,
// stepping through and finishing them. Writing each replayed delivery is
// the ingest write path's.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// Jobs is the replay job queue on pool; its console reads use the read pool.
type Jobs struct {
	pool *pgxpool.Pool
	read *pgxpool.Pool
}

// New returns the job queue on pools.
func New(pools pg.Pools) *Jobs { return &Jobs{pool: pools.Write, read: pools.ForReads()} }

// replayProgressSQL moves a job past one delivery and adds its counts,
// only while the worker holds the job, and extends the worker's lease.
const replayProgressSQL = `
UPDATE replay_jobs j SET done = j.done + 1, after_at = @after_at, after_id = @after_id::uuid,
    counts = coalesce((SELECT jsonb_object_agg(k, coalesce((j.counts ->> k)::bigint, 0) + coalesce((@add::jsonb ->> k)::bigint, 0))
                       FROM (SELECT jsonb_object_keys(j.counts) UNION SELECT jsonb_object_keys(@add::jsonb)) AS keys (k)), '{}'),
    lease_until = now() + make_interval(secs => @lease::float8)
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.status = 'running' AND j.worker = @worker`

// Advance records a job step in tx, or answers ErrReplayLeaseLost (and so
// rolls tx back) when the worker no longer holds the job.
func Advance(ctx context.Context, tx pgx.Tx, step domain.ReplayStep, add map[string]int64) error {
	counts, _ := json.Marshal(add)
	tag, err := tx.Exec(ctx, replayProgressSQL, pgx.NamedArgs{"tenant_id": step.Job.TenantID, "job_id": step.Job.ID,
		"worker": step.Worker, "lease": step.Lease.Seconds(), "after_at": step.Original.ReceivedAt,
		"after_id": step.Original.ID, "add": string(counts)})
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrReplayLeaseLost
	}
	return nil
}

// replayJobColumns are a job's columns as scanReplayJob reads them, from a
// CTE j that a statement writing the job returns it through: Citus refuses
// their subquery (the tenant's slug) in a RETURNING list.
const replayJobColumns = `j.id, j.tenant_id, (SELECT slug FROM tenants WHERE id = j.tenant_id), j.filter, j.status,
       j.upto, j.total, j.done, j.counts, j.after_at, coalesce(j.after_id::text, ''), j.actor_kind, j.actor,
       j.actor_address, coalesce(j.actor_id, 0), j.created_at, j.started_at, j.finished_at, j.error`

// filterJSON is a job's filter as its row stores it.
type filterJSON struct {
	Provider string     `json:"provider,omitempty"`
	Status   int        `json:"status,omitempty"`
	Outcome  string     `json:"outcome,omitempty"`
	From     *time.Time `json:"from,omitempty"`
	Before   *time.Time `json:"before,omitempty"`
}

func scanReplayJob(row pgx.CollectableRow) (domain.ReplayJob, error) {
	var (
		j                          domain.ReplayJob
		filter                     filterJSON
		afterAt, started, finished pgtype.Timestamptz
	)
	err := row.Scan(&j.ID, &j.TenantID, &j.TenantSlug, &filter, &j.Status, &j.Upto, &j.Total, &j.Done, &j.Counts,
		&afterAt, &j.After.ID, &j.CreatedBy.Kind, &j.CreatedBy.Name, &j.CreatedBy.Address, &j.CreatedBy.ID, &j.CreatedAt,
		&started, &finished, &j.Error)
	j.Filter = domain.DeliveryFilter{Provider: filter.Provider, Status: filter.Status, Outcome: domain.Outcome(filter.Outcome)}
	if filter.From != nil {
		j.Filter.From = *filter.From
	}
	if filter.Before != nil {
		j.Filter.Before = *filter.Before
	}
	j.After.ReceivedAt, j.StartedAt, j.FinishedAt = afterAt.Time, started.Time, finished.Time
	return j, err
}

// replayableCond is what a job replays (domain.DeliveryDetail.Replayable):
// a body kept from an authenticated sender with its request, and not
// erased since, received before the job was created, and not itself a
// replay. domain.ErasedBody holds no quote, so it is a plain literal.
const replayableCond = `d.body IS NOT NULL AND d.body <> convert_to('` + domain.ErasedBody + `', 'UTF8')
  AND d.signature = 'valid' AND d.replay_of IS NULL AND d.method IS NOT NULL AND d.received_at < @upto`

// countReplayableSQL and the two statements after it hold the filter's
// conditions in %s (deliveryConds).
const countReplayableSQL = `SELECT count(*) FROM deliveries d WHERE d.tenant_id = @tenant_id AND ` + replayableCond + `%s`

// startReplayJobSQL queues a job with the number of deliveries it matches,
// counted before on the read pool; replay_jobs_one_active refuses a second
// active job of the tenant.
const startReplayJobSQL = `
WITH j AS (
INSERT INTO replay_jobs AS j (tenant_id, filter, upto, total, actor_kind, actor, actor_address, actor_id)
VALUES (@tenant_id, @filter::jsonb, @upto, @total, @actor_kind, @actor, @actor_address, nullif(@actor_id::bigint, 0))
RETURNING j.*)
SELECT ` + replayJobColumns + ` FROM j`

// nextReplayableSQL lists the deliveries a job has yet to handle, in order,
// along the primary key from its position.
const nextReplayableSQL = `
SELECT d.received_at, d.id::text FROM deliveries d
WHERE d.tenant_id = @tenant_id AND ` + replayableCond + `
  AND d.received_at >= @after_at AND (d.received_at, d.id) > (@after_at, @after_id::uuid)%s
ORDER BY d.received_at, d.id
LIMIT @limit`

const activeReplayJobSQL = `
SELECT id FROM replay_jobs WHERE tenant_id = @tenant_id AND status IN ('queued', 'running')`

// CountReplayable implements domain.ReplayService, on the read pool.
func (q *Jobs) CountReplayable(ctx context.Context, tenantID int64, f domain.DeliveryFilter) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	return q.countReplayable(ctx, tenantID, f, time.Now())
}

// countReplayable counts on the read pool, under its statement timeout:
// a request's count never holds an ingest connection.
func (q *Jobs) countReplayable(ctx context.Context, tenantID int64, f domain.DeliveryFilter, upto time.Time) (int64, error) {
	args := pgx.NamedArgs{"tenant_id": tenantID, "upto": upto}
	var n int64
	err := q.read.QueryRow(ctx, fmt.Sprintf(countReplayableSQL, pg.DeliveryConds(f, args)), args).Scan(&n)
	return n, pg.Translate(err)
}

// StartReplayJob implements domain.ReplayService. The job records the
// actor of ctx, whose authority its worker acts under.
func (q *Jobs) StartReplayJob(ctx context.Context, tenantID int64, f domain.DeliveryFilter, confirmed bool) (domain.ReplayJob, error) {
	if err := f.Validate(); err != nil {
		return domain.ReplayJob{}, err
	}
	actor, ok := domain.ActorFrom(ctx)
	if !ok {
		return domain.ReplayJob{}, domain.Errorf(domain.EINTERNAL, "a replay job needs an actor to act for")
	}
	filter := filterJSON{Provider: f.Provider, Status: f.Status, Outcome: string(f.Outcome)}
	if !f.From.IsZero() {
		filter.From = &f.From
	}
	if !f.Before.IsZero() {
		filter.Before = &f.Before
	}
	raw, _ := json.Marshal(filter)
	upto := time.Now()
	var job domain.ReplayJob
	total, err := q.countReplayable(ctx, tenantID, f, upto)
	if err != nil {
		return job, err
	}
	if total > domain.ReplayConfirmAbove && !confirmed {
		return job, domain.ReplayNeedsConfirm(total)
	}
	args := pgx.NamedArgs{"tenant_id": tenantID, "filter": string(raw), "upto": upto, "total": total,
		"actor_kind": actor.Kind, "actor": actor.Name, "actor_address": actor.Address, "actor_id": actor.ID}
	err = pg.WithTx(ctx, q.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, startReplayJobSQL, args)
		if err != nil {
			return err
		}
		if job, err = pgx.CollectExactlyOneRow(rows, scanReplayJob); err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.ReplayStartAction, replayTarget(job.ID),
			fmt.Sprintf("%s; %d deliveries match", f, job.Total))
	})
	if pg.UniqueViolation(err) {
		var active int64
		if q.pool.QueryRow(ctx, activeReplayJobSQL, pgx.NamedArgs{"tenant_id": tenantID}).Scan(&active) == nil {
			return job, domain.Errorf(domain.ECONFLICT, "replay job %d of this workspace is still queued or running; "+
				"wait for it to finish or cancel it first", active)
		}
		return job, domain.Errorf(domain.ECONFLICT, "another replay job of this workspace is still queued or running")
	}
	return job, pg.Translate(err)
}

func replayTarget(id int64) string { return fmt.Sprintf("replay job %d", id) }

const replayJobSQL = `SELECT ` + replayJobColumns + ` FROM replay_jobs j WHERE j.tenant_id = @tenant_id AND j.id = @job_id`

const replayJobsSQL = `
SELECT ` + replayJobColumns + ` FROM replay_jobs j WHERE j.tenant_id = @tenant_id AND j.id < @before_id
ORDER BY j.id DESC LIMIT @limit`

// ReplayJob implements domain.ReplayService.
func (q *Jobs) ReplayJob(ctx context.Context, tenantID, id int64) (domain.ReplayJob, error) {
	rows, err := q.read.Query(ctx, replayJobSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": id})
	if err != nil {
		return domain.ReplayJob{}, pg.Translate(err)
	}
	job, err := pgx.CollectExactlyOneRow(rows, scanReplayJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return job, pg.NotFound("replay job %d not found", id)
	}
	return job, pg.Translate(err)
}

// ReplayJobs implements domain.ReplayService.
func (q *Jobs) ReplayJobs(ctx context.Context, tenantID int64, page domain.Page) ([]domain.ReplayJob, string, error) {
	var before int64 = math.MaxInt64
	if err := pg.DecodeCursor(page.Cursor, &before); err != nil {
		return nil, "", err
	}
	limit := pg.PageLimit(page)
	rows, err := q.read.Query(ctx, replayJobsSQL, pgx.NamedArgs{"tenant_id": tenantID, "before_id": before, "limit": limit + 1})
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	jobs, err := pgx.CollectRows(rows, scanReplayJob)
	if err != nil {
		return nil, "", pg.Translate(err)
	}
	jobs, more := pg.Trim(jobs, limit)
	if !more {
		return jobs, "", nil
	}
	return jobs, pg.EncodeCursor(jobs[len(jobs)-1].ID), nil
}

const cancelReplayJobSQL = `
WITH j AS (
UPDATE replay_jobs j SET status = 'cancelled', finished_at = now(), lease_until = NULL
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.status IN ('queued', 'running')
RETURNING j.*)
SELECT ` + replayJobColumns + ` FROM j`

// CancelReplayJob implements domain.ReplayService. The update waits for a
// step that already moved the job to commit, so the summary counts it.
func (q *Jobs) CancelReplayJob(ctx context.Context, tenantID, id int64) (domain.ReplayJob, error) {
	var job domain.ReplayJob
	err := pg.WithTx(ctx, q.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, cancelReplayJobSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": id})
		if err != nil {
			return err
		}
		job, err = pgx.CollectExactlyOneRow(rows, scanReplayJob)
		if errors.Is(err, pgx.ErrNoRows) {
			return q.jobNotActive(ctx, tenantID, id)
		}
		if err != nil {
			return err
		}
		return pg.Audit(ctx, tx, tenantID, domain.ReplayCancelAction, replayTarget(id), "cancelled after "+job.Summary())
	})
	return job, pg.Translate(err)
}

// jobNotActive explains why a job could not be cancelled: it does not
// exist, or it has ended.
func (q *Jobs) jobNotActive(ctx context.Context, tenantID, id int64) error {
	job, err := q.ReplayJob(ctx, tenantID, id)
	if err != nil {
		return err
	}
	return domain.Errorf(domain.ECONFLICT, "replay job %d has already ended (%s)", id, job.Status)
}

// replayCandidatesSQL lists the jobs a worker may claim, the one that
// waited longest first: queued, or running under a lease that ran out (its
// worker stopped or died). It is the one read across tenants, as
// maintenance's are: workers serve every tenant.
const replayCandidatesSQL = `
SELECT tenant_id, id FROM replay_jobs
WHERE status = 'queued' OR (status = 'running' AND lease_until < now())
ORDER BY coalesce(lease_until, created_at), id
LIMIT @limit`

// claimReplayJobSQL takes one candidate if it is still free. Two workers
// claiming it at once both update the row in turn, and the second, seeing
// the lease the first took, claims nothing: no lock is held across
// statements, and each claim is a statement on one tenant's row (one shard
// under Citus).
const claimReplayJobSQL = `
WITH j AS (
UPDATE replay_jobs j SET status = 'running', worker = @worker,
    lease_until = now() + make_interval(secs => @lease::float8), started_at = coalesce(j.started_at, @now::timestamptz)
WHERE j.tenant_id = @tenant_id AND j.id = @job_id
  AND (j.status = 'queued' OR (j.status = 'running' AND j.lease_until < now()))
RETURNING j.*)
SELECT ` + replayJobColumns + ` FROM j`

// replayCandidates is how many candidates a claim tries before it gives up
// until the next poll.
const replayCandidates = 10

// ClaimReplayJob implements domain.ReplayService.
func (q *Jobs) ClaimReplayJob(ctx context.Context, worker string, lease time.Duration) (domain.ReplayJob, bool, error) {
	rows, err := q.pool.Query(ctx, replayCandidatesSQL, pgx.NamedArgs{"limit": replayCandidates})
	if err != nil {
		return domain.ReplayJob{}, false, pg.Translate(err)
	}
	candidates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]int64, error) {
		var c [2]int64
		return c, row.Scan(&c[0], &c[1])
	})
	if err != nil {
		return domain.ReplayJob{}, false, pg.Translate(err)
	}
	for _, c := range candidates {
		now, err := pg.Now(ctx, q.pool) // Citus refuses now() beside a column in an UPDATE
		if err != nil {
			return domain.ReplayJob{}, false, err
		}
		rows, err := q.pool.Query(ctx, claimReplayJobSQL, pgx.NamedArgs{"tenant_id": c[0], "job_id": c[1],
			"worker": worker, "lease": lease.Seconds(), "now": now})
		if err != nil {
			return domain.ReplayJob{}, false, pg.Translate(err)
		}
		job, err := pgx.CollectExactlyOneRow(rows, scanReplayJob)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // another worker took it first
		}
		return job, err == nil, pg.Translate(err)
	}
	return domain.ReplayJob{}, false, nil
}

// NextReplayable implements domain.ReplayService.
func (q *Jobs) NextReplayable(ctx context.Context, job domain.ReplayJob, limit int) ([]domain.DeliveryKey, error) {
	args := pgx.NamedArgs{"tenant_id": job.TenantID, "upto": job.Upto, "after_at": pg.NegInfinity(),
		"after_id": uuid.Nil.String(), "limit": limit}
	if job.After.ID != "" {
		args["after_at"], args["after_id"] = job.After.ReceivedAt, job.After.ID
	}
	rows, err := q.pool.Query(ctx, fmt.Sprintf(nextReplayableSQL, pg.DeliveryConds(job.Filter, args)), args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.DeliveryKey, error) {
		var k domain.DeliveryKey
		return k, row.Scan(&k.ReceivedAt, &k.ID)
	})
	return keys, pg.Translate(err)
}

const finishReplayJobSQL = `
WITH j AS (
UPDATE replay_jobs j SET status = @status, error = @error, finished_at = now(), lease_until = NULL
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.status = 'running' AND j.worker = @worker
RETURNING j.*)
SELECT ` + replayJobColumns + ` FROM j`

// FinishReplayJob implements domain.ReplayService.
func (q *Jobs) FinishReplayJob(ctx context.Context, step domain.ReplayStep, status, reason string) (domain.ReplayJob, error) {
	var job domain.ReplayJob
	err := pg.WithTx(ctx, q.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, finishReplayJobSQL, pgx.NamedArgs{"tenant_id": step.Job.TenantID, "job_id": step.Job.ID,
			"worker": step.Worker, "status": status, "error": reason})
		if err != nil {
			return err
		}
		job, err = pgx.CollectExactlyOneRow(rows, scanReplayJob)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrReplayLeaseLost
		}
		if err != nil {
			return err
		}
		summary := job.Summary()
		if status == domain.ReplayFailed {
			summary = "failed after " + summary + ": " + reason
		}
		return pg.Audit(ctx, tx, job.TenantID, domain.ReplayDoneAction, replayTarget(job.ID), summary)
	})
	return job, pg.Translate(err)
}

const releaseReplayJobSQL = `
UPDATE replay_jobs SET lease_until = now()
WHERE tenant_id = @tenant_id AND id = @job_id AND status = 'running' AND worker = @worker`

// ReleaseReplayJob implements domain.ReplayService.
func (q *Jobs) ReleaseReplayJob(ctx context.Context, tenantID, jobID int64, worker string) error {
	_, err := q.pool.Exec(ctx, releaseReplayJobSQL, pgx.NamedArgs{"tenant_id": tenantID, "job_id": jobID, "worker": worker})
	return pg.Translate(err)
}

// SkipReplayStep implements domain.ReplayService.
func (q *Jobs) SkipReplayStep(ctx context.Context, step domain.ReplayStep, why string) error {
	return pg.WithTx(ctx, q.pool, func(tx pgx.Tx) error {
		return Advance(ctx, tx, step, map[string]int64{why: 1})
	})
}
