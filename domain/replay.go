package domain

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Replays re-run a stored, authenticated delivery through today's parser
// and ingest as a new delivery that names the original (ReplayOf). The
// signature and timestamp are not checked again: they were on arrival.
// Idempotency is: an event that was applied is a duplicate on replay, and
// one that claimed nothing (rejected: a disabled scope, a parser that
// lacked a field, a limit) is processed now.

// Replay job statuses.
const (
	ReplayQueued    = "queued"
	ReplayRunning   = "running"
	ReplayDone      = "done"
	ReplayCancelled = "cancelled"
	ReplayFailed    = "failed"
)

// What a job counts besides the outcomes of the events it replayed: the
// deliveries it could not replay.
const (
	// ReplayUnparsable counts deliveries whose body today's parser refuses
	// (no new delivery is stored for them).
	ReplayUnparsable = "unparsable"
	// ReplaySkipped counts deliveries that are gone or can no longer be
	// replayed (their provider removed, their body erased).
	ReplaySkipped = "skipped"
)

// Audit actions of replays. A job's deliveries are summed up in its
// ReplayDoneAction entry, not recorded one by one.
const (
	ReplayAction       = "delivery_replay" // one delivery, by hand
	ReplayStartAction  = "replay_start"
	ReplayCancelAction = "replay_cancel"
	ReplayDoneAction   = "replay_done" // also for a job that failed
)

// ReplayJob is a bulk replay: every delivery its filter matches that was
// received before the job was created, oldest first.
type ReplayJob struct {
	ID         int64
	TenantID   int64
	TenantSlug string
	Filter     DeliveryFilter
	Status     string
	Total      int64            // deliveries matched when the job was created
	Done       int64            // deliveries handled so far
	Counts     map[string]int64 // event outcomes of the replays, ReplayUnparsable and ReplaySkipped
	CreatedBy  Actor
	Upto       time.Time   // deliveries received before it are replayed: the job's creation
	After      DeliveryKey // the last delivery handled; zero before the first
	CreatedAt  time.Time
	StartedAt  time.Time // zero until a worker took it
	FinishedAt time.Time // zero until done, cancelled or failed
	Error      string    // why it failed
}

// Active reports whether the job is queued or running.
func (j ReplayJob) Active() bool { return j.Status == ReplayQueued || j.Status == ReplayRunning }

// Summary says what the job did, for the audit log and the console:
// "120 of 120 deliveries: 300 duplicate, 5 applied, 2 unparsable".
func (j ReplayJob) Summary() string {
	s := fmt.Sprintf("%d of %d deliveries", j.Done, j.Total)
	if counts := CountsText(j.Counts); counts != "" {
		s += ": " + counts
	}
	return s
}

// CountsText says what counts hold, in display order: "3 duplicate, 1
// applied"; "" when they hold nothing.
func CountsText(counts map[string]int64) string {
	var parts []string
	for _, key := range ReplayCountKeys() {
		if n := counts[key]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, key))
		}
	}
	return strings.Join(parts, ", ")
}

// CountResults counts results by outcome.
func CountResults(results []Result) map[string]int64 {
	counts := map[string]int64{}
	for _, r := range results {
		counts[string(r.Outcome)]++
	}
	return counts
}

// ReplayCountKeys lists the keys of a job's counts in display order.
func ReplayCountKeys() []string {
	keys := make([]string, 0, len(Outcomes)+2)
	for _, o := range Outcomes {
		keys = append(keys, string(o))
	}
	return append(keys, ReplayUnparsable, ReplaySkipped)
}

// ReplayStep is one delivery of a job, replayed by the worker that holds
// the job: the job's position and counts move in the transaction that
// stores the replay, so a job resumed after a restart replays nothing twice.
type ReplayStep struct {
	Job      ReplayJob
	Worker   string        // the holder of the job's lease
	Lease    time.Duration // how long the lease lasts after this step
	Original DeliveryKey
}

// DeliveryKey is where a delivery sits in the log.
type DeliveryKey struct {
	ReceivedAt time.Time
	ID         string
}

// ReplayedDelivery is a delivery a job replayed and its replay.
type ReplayedDelivery struct{ Original, Replay DeliveryBrief }

// ErrReplayLeaseLost is returned by a job step when the worker no longer
// holds the job: it was cancelled, or another worker took it over after the
// lease ran out. Nothing of the step was stored.
var ErrReplayLeaseLost = &Error{Code: ECONFLICT, Message: "the replay job was cancelled or taken over by another worker"}

// ReplayService replays deliveries and runs bulk replay jobs. Replays are
// recorded in the audit log with the actor of ctx.
type ReplayService interface {
	// Replay stores events as delivery d, a replay of d.ReplayOf, deciding
	// their outcomes exactly as Ingest does, with an audit entry
	// (ReplayAction) in the same transaction.
	Replay(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event) ([]Result, error)
	// CountReplayable is how many deliveries a job with filter f would
	// replay if it were created now: the tenant's deliveries whose body was
	// kept from an authenticated sender, replays excluded.
	CountReplayable(ctx context.Context, tenantID int64, f DeliveryFilter) (int64, error)
	// PreviewReplay lists the first limit deliveries a job with filter f
	// would replay, in its order (oldest first), with their outcomes.
	PreviewReplay(ctx context.Context, tenantID int64, f DeliveryFilter, limit int) ([]DeliveryBrief, error)
	// ReplayJobDeliveries lists the replays a job wrote, each with its
	// original, newest first, paged both ways; outcome keeps those with an
	// event of that outcome.
	ReplayJobDeliveries(ctx context.Context, job ReplayJob, outcome Outcome, p Page) ([]ReplayedDelivery, string, string, error)
	// StartReplayJob queues a job and records ReplayStartAction. It is
	// ECONFLICT while another job of the tenant is queued or running, and
	// EINVALID (ReplayNeedsConfirm) when the job would replay more than
	// ReplayConfirmAbove deliveries and confirmed is false.
	StartReplayJob(ctx context.Context, tenantID int64, f DeliveryFilter, confirmed bool) (ReplayJob, error)
	// ReplayJob returns one job of the tenant, or ENOTFOUND.
	ReplayJob(ctx context.Context, tenantID, id int64) (ReplayJob, error)
	// ReplayJobs lists the tenant's jobs, newest first, a keyset page at a
	// time; the cursor is "" on the last page.
	ReplayJobs(ctx context.Context, tenantID int64, p Page) ([]ReplayJob, string, error)
	// CancelReplayJob stops a queued or running job and records
	// ReplayCancelAction. A step a worker is writing meanwhile is either
	// counted before the cancel or not stored at all. A job that has ended
	// is ECONFLICT.
	CancelReplayJob(ctx context.Context, tenantID, id int64) (ReplayJob, error)

	// ClaimReplayJob gives worker the job that waited longest, queued or
	// held by a worker whose lease ran out, for lease; false when none.
	ClaimReplayJob(ctx context.Context, worker string, lease time.Duration) (ReplayJob, bool, error)
	// NextReplayable lists up to limit deliveries the job has yet to
	// handle, in order.
	NextReplayable(ctx context.Context, job ReplayJob, limit int) ([]DeliveryKey, error)
	// ReplayStep is Replay for one delivery of a job held by step.Worker,
	// moving the job's position and counts in the same transaction instead
	// of writing an audit entry. ErrReplayLeaseLost when the worker no
	// longer holds the job.
	ReplayStep(ctx context.Context, step ReplayStep, d Delivery, p ProviderEndpoint, events []Event) ([]Result, error)
	// SkipReplayStep moves the job past a delivery it could not replay,
	// counting it under why (ReplayUnparsable or ReplaySkipped).
	SkipReplayStep(ctx context.Context, step ReplayStep, why string) error
	// FinishReplayJob ends a job the worker holds, as done or (with a
	// reason) failed, with a ReplayDoneAction entry summing it up.
	FinishReplayJob(ctx context.Context, step ReplayStep, status, reason string) (ReplayJob, error)
	// ReleaseReplayJob gives a job back for any worker to continue at once.
	ReleaseReplayJob(ctx context.Context, jobTenantID, jobID int64, worker string) error
	// CheckReplayActor answers EFORBIDDEN, saying why, when the actor who
	// started job may no longer replay in its tenant: their API token was
	// revoked, has expired or is gone; the operator was disabled, or is no
	// longer an admin nor at least an operator of the tenant. A job's
	// worker checks it for every slice it claims.
	CheckReplayActor(ctx context.Context, job ReplayJob) error
}

// ReplayConfirmAbove is the largest job that starts without an explicit
// confirmation: a larger one writes that many deliveries.
const ReplayConfirmAbove = 10000

// ReplayNeedsConfirm refuses an unconfirmed job of n deliveries.
func ReplayNeedsConfirm(n int64) error {
	return Errorf(EINVALID, "this job would replay %d deliveries, more than %d: confirm it to start it "+
		`(the API's "confirm": true)`, n, ReplayConfirmAbove)
}
