package backfills

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// requeueStaleSQL and cancelStaleSQL give back the running jobs whose node
// stopped reporting (it died): queued again for another node, or cancelled
// when an operator had asked them to stop. Like the claim, they read
// across tenants, as maintenance does: serve's nodes run every tenant's
// jobs. Two statements rather than a CASE, which Citus refuses now() in.
const (
	cancelStaleSQL = `
UPDATE backfill_jobs SET heartbeat_at = NULL, state = 'cancelled', finished_at = now()
WHERE state = 'running' AND cancel_requested AND heartbeat_at < now() - make_interval(secs => @stale::float8)`
	requeueStaleSQL = `
UPDATE backfill_jobs SET heartbeat_at = NULL, state = 'queued'
WHERE state = 'running' AND heartbeat_at < now() - make_interval(secs => @stale::float8)`
)

// queuedJobsSQL lists, without locking them (Citus cannot lock rows across
// shards), the next job of each tenant with a job queued and none running:
// its oldest sweep, else its oldest job (none of an archived tenant's,
// which wait until it is unarchived); the tenants whose latest slice
// started longest ago (or never) first. Sweeps go first within a tenant
// only: one tenant's endless sweeps delay another tenant's jobs by a slice
// per turn, never to their end. claimJobSQL then takes one, skipping it
// when another node holds it; backfill_jobs_one_running refuses a second
// running job of a tenant claimed meanwhile by another node.
const (
	queuedJobsSQL = `
SELECT q.tenant_id, q.id FROM (
    SELECT DISTINCT ON (j.tenant_id) j.tenant_id, j.id, j.created_at FROM backfill_jobs j WHERE j.state = 'queued'
    ORDER BY j.tenant_id, j.sweep DESC, j.created_at, j.id) q
LEFT JOIN LATERAL (SELECT max(t.slice_started_at) AS at FROM backfill_jobs t
                   WHERE t.tenant_id = q.tenant_id AND t.slice_started_at IS NOT NULL) turn ON true
WHERE NOT EXISTS (SELECT FROM backfill_jobs r WHERE r.tenant_id = q.tenant_id AND r.state = 'running')
  AND q.tenant_id NOT IN (SELECT id FROM tenants WHERE archived_at IS NOT NULL)
ORDER BY turn.at NULLS FIRST, q.created_at, q.id
LIMIT @limit`
	claimJobSQL = `
UPDATE backfill_jobs j SET state = 'running', started_at = coalesce(j.started_at, @now::timestamptz),
    slice_started_at = @now::timestamptz, heartbeat_at = @now::timestamptz
WHERE (j.tenant_id, j.id) IN (SELECT tenant_id, id FROM backfill_jobs
                              WHERE tenant_id = @tenant_id AND id = @job_id AND state = 'queued' FOR UPDATE SKIP LOCKED)
RETURNING j.id`
)

// claimCandidates is how many queued jobs a claim tries before it says
// there is none: more than there are nodes claiming at once.
const claimCandidates = 16

// ClaimBackfill implements pull.JobRunnerStore.
func (k *Keeper) ClaimBackfill(ctx context.Context) (pull.Job, bool, error) {
	stale := pgx.NamedArgs{"stale": pull.StaleAfter.Seconds()}
	for _, sql := range []string{cancelStaleSQL, requeueStaleSQL} {
		if _, err := k.pool.Exec(ctx, sql, stale); err != nil {
			return pull.Job{}, false, pg.Translate(err)
		}
	}
	rows, err := k.pool.Query(ctx, queuedJobsSQL, pgx.NamedArgs{"limit": claimCandidates})
	if err != nil {
		return pull.Job{}, false, pg.Translate(err)
	}
	queued, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Tenant, ID int64 }])
	if err != nil {
		return pull.Job{}, false, pg.Translate(err)
	}
	for _, q := range queued {
		var job pull.Job
		err := pg.WithTx(ctx, k.pool, func(tx pgx.Tx) error {
			now, err := pg.Now(ctx, tx)
			if err != nil {
				return err
			}
			job, err = writeThenRead(ctx, tx, claimJobSQL, pgx.NamedArgs{"tenant_id": q.Tenant, "job_id": q.ID, "now": now},
				func() error { return errTaken })
			return err
		})
		if errors.Is(err, errTaken) || pg.UniqueViolation(err) {
			continue // another node has it or another job of its tenant, or it was cancelled meanwhile
		}
		return job, err == nil, err
	}
	return pull.Job{}, false, nil
}

// errTaken: the job a claim tried is no longer queued, or is being claimed.
var errTaken = errors.New("job taken")

// progressArgs are the named arguments of a job's progress.
func progressArgs(tenantID, id int64, p pull.Progress) pgx.NamedArgs {
	outcomes := p.Outcomes
	if outcomes == nil {
		outcomes = map[string]int{}
	}
	raw, _ := json.Marshal(outcomes)
	return pgx.NamedArgs{"tenant_id": tenantID, "job_id": id, "deliveries": p.Deliveries, "events": p.Events,
		"missed": p.Missed, "outcomes": string(raw), "pages": p.Pages, "run_ms": p.RanFor.Milliseconds()}
}

const reportBackfillSQL = `
UPDATE backfill_jobs j SET deliveries = @deliveries, events = @events, missed = @missed, outcomes = @outcomes::jsonb,
    pages = @pages, run_ms = @run_ms, heartbeat_at = now()
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.state = 'running'
RETURNING j.cancel_requested`

// ReportBackfill implements pull.JobRunnerStore. A job that is no longer
// running (it went stale and was queued again, or it ended) answers cancel
// too: its runner must stop.
func (k *Keeper) ReportBackfill(ctx context.Context, tenantID, id int64, p pull.Progress) (bool, error) {
	var cancel bool
	err := k.pool.QueryRow(ctx, reportBackfillSQL, progressArgs(tenantID, id, p)).Scan(&cancel)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	return cancel, pg.Translate(err)
}

const finishBackfillSQL = `
UPDATE backfill_jobs j SET state = @state, error = @error, deliveries = @deliveries, events = @events, missed = @missed,
    outcomes = @outcomes::jsonb, pages = @pages, run_ms = @run_ms, finished_at = now(), heartbeat_at = NULL
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.state = 'running'`

// FinishBackfill implements pull.JobRunnerStore: state must be one that
// ends a job (EINVALID otherwise), and the job running (ECONFLICT
// otherwise: it went stale and another node may hold it).
func (k *Keeper) FinishBackfill(ctx context.Context, tenantID, id int64, p pull.Progress, state pull.JobState, reason string) error {
	if !(pull.Job{State: state}).Ended() {
		return domain.Errorf(domain.EINVALID, "a backfill job cannot finish as %q", state)
	}
	args := progressArgs(tenantID, id, p)
	args["state"], args["error"] = string(state), reason
	tag, err := k.pool.Exec(ctx, finishBackfillSQL, args)
	if err != nil {
		return pg.Translate(err)
	}
	if tag.RowsAffected() == 0 {
		return domain.Errorf(domain.ECONFLICT, "backfill job %d is not running", id)
	}
	return nil
}

// yieldBackfillSQL queues a running job again after a slice, at the
// position its next slice starts; one asked to stop meanwhile is
// cancelled. @now: Citus refuses now() in a CASE.
const yieldBackfillSQL = `
UPDATE backfill_jobs j SET deliveries = @deliveries, events = @events, missed = @missed, outcomes = @outcomes::jsonb,
    pages = @pages, run_ms = @run_ms, resume_type = @resume_type, resume_from = @resume_from, span_ms = @span_ms,
    heartbeat_at = NULL, state = CASE WHEN j.cancel_requested THEN 'cancelled' ELSE 'queued' END,
    finished_at = CASE WHEN j.cancel_requested THEN @now::timestamptz END
WHERE j.tenant_id = @tenant_id AND j.id = @job_id AND j.state = 'running'`

// YieldBackfill implements pull.JobRunnerStore.
func (k *Keeper) YieldBackfill(ctx context.Context, tenantID, id int64, p pull.Progress, at pull.Position) error {
	now, err := pg.Now(ctx, k.pool)
	if err != nil {
		return err
	}
	args := progressArgs(tenantID, id, p)
	args["resume_type"], args["span_ms"], args["now"] = at.ObjectType, at.Span.Milliseconds(), now
	args["resume_from"] = pgtype.Timestamptz{Time: at.From, Valid: !at.From.IsZero()}
	tag, err := k.pool.Exec(ctx, yieldBackfillSQL, args)
	if err != nil {
		return pg.Translate(err)
	}
	if tag.RowsAffected() == 0 {
		return domain.Errorf(domain.ECONFLICT, "backfill job %d is not running", id)
	}
	return nil
}

// sweepsDueSQL lists the providers with API credentials and a scope (the
// object types a sweep pulls; without one it could only fail) whose newest
// sweep was created at least @every before @now, or that never had one,
// and have none queued or running. A sweep starts where the last one that
// finished its window ended, less the overlap (a failed or cancelled one
// moves nothing), and never further back than @oldest. Across tenants,
// like the claim.
const sweepsDueSQL = `
SELECT c.tenant_id, c.provider_id,
       greatest(coalesce(done.to_at - make_interval(secs => @overlap::float8),
                         @now::timestamptz - make_interval(secs => @every::float8)), @oldest::timestamptz)
FROM provider_api_credentials c
LEFT JOIN LATERAL (SELECT j.created_at FROM backfill_jobs j
                   WHERE j.tenant_id = c.tenant_id AND j.provider_id = c.provider_id AND j.sweep
                   ORDER BY j.id DESC LIMIT 1) last ON true
LEFT JOIN LATERAL (SELECT j.to_at FROM backfill_jobs j
                   WHERE j.tenant_id = c.tenant_id AND j.provider_id = c.provider_id AND j.sweep AND j.state = 'done'
                   ORDER BY j.to_at DESC LIMIT 1) done ON true
WHERE (last.created_at IS NULL OR last.created_at <= @now::timestamptz - make_interval(secs => @every::float8))
  AND NOT EXISTS (SELECT FROM backfill_jobs a WHERE a.tenant_id = c.tenant_id AND a.provider_id = c.provider_id
                  AND a.sweep AND a.state IN ('queued', 'running'))
  AND EXISTS (SELECT FROM scopes sc WHERE sc.tenant_id = c.tenant_id AND sc.provider_id = c.provider_id)
  AND c.tenant_id NOT IN (SELECT id FROM tenants WHERE archived_at IS NOT NULL)
ORDER BY c.tenant_id, c.provider_id`

// SweepsDue implements pull.JobRunnerStore. A sweep never reaches further
// back than pull.MaxSince, however long the provider went unswept.
func (k *Keeper) SweepsDue(ctx context.Context, now time.Time, every, overlap time.Duration) ([]pull.SweepDue, error) {
	rows, err := k.pool.Query(ctx, sweepsDueSQL, pgx.NamedArgs{"now": now, "every": every.Seconds(),
		"overlap": overlap.Seconds(), "oldest": now.Add(-pull.MaxSince)})
	if err != nil {
		return nil, pg.Translate(err)
	}
	due, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pull.SweepDue, error) {
		var d pull.SweepDue
		return d, row.Scan(&d.TenantID, &d.ProviderID, &d.From)
	})
	return due, pg.Translate(err)
}

// credentialedProvidersSQL lists the tenant's providers with API
// credentials.
const credentialedProvidersSQL = `
SELECT p.id, p.name FROM provider_api_credentials c
JOIN providers p ON p.tenant_id = c.tenant_id AND p.id = c.provider_id
WHERE c.tenant_id = @tenant_id`

// lastSweepsSQL is each provider's newest ended sweep.
const lastSweepsSQL = `
SELECT DISTINCT ON (j.provider_id) ` + jobColumns + ` FROM backfill_jobs j
WHERE j.tenant_id = @tenant_id AND j.sweep AND j.finished_at IS NOT NULL
ORDER BY j.provider_id, j.finished_at DESC, j.id DESC`

// LastSweeps implements pull.JobStore, on the read pool.
func (k *Keeper) LastSweeps(ctx context.Context, tenantID int64) (map[int64]pull.Job, error) {
	args := pgx.NamedArgs{"tenant_id": tenantID}
	rows, err := k.read.Query(ctx, credentialedProvidersSQL, args)
	if err != nil {
		return nil, pg.Translate(err)
	}
	providers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pull.Job, error) {
		j := pull.Job{TenantID: tenantID}
		return j, row.Scan(&j.ProviderID, &j.Provider)
	})
	if err != nil || len(providers) == 0 {
		return map[int64]pull.Job{}, pg.Translate(err)
	}
	if rows, err = k.read.Query(ctx, lastSweepsSQL, args); err != nil {
		return nil, pg.Translate(err)
	}
	sweeps, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, pg.Translate(err)
	}
	last := make(map[int64]pull.Job, len(providers))
	for _, p := range providers {
		last[p.ProviderID] = p
	}
	for _, j := range sweeps {
		if _, ok := last[j.ProviderID]; ok {
			last[j.ProviderID] = j
		}
	}
	return last, nil
}
