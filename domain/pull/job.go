package pull

import (
	"context"
	"time"
)

// JobState is where a backfill job is.
type JobState string

const (
	Queued    JobState = "queued"
	Running   JobState = "running"
	Done      JobState = "done"
	Failed    JobState = "failed"
	Cancelled JobState = "cancelled"
)

// Job is one backfill of a provider: started by an operator (the API, the
// console) or by serve's sweep, and run by one serve node.
type Job struct {
	ID         int64
	TenantID   int64
	TenantSlug string
	ProviderID int64
	Provider   string // its name
	Sweep      bool   // started by the sweep, not by an operator
	From, To   time.Time
	ObjectType string // "" for every object type of the provider's scopes
	State      JobState
	// What it did so far: deliveries and events written, events by
	// outcome, and Missed, the changes webhooks had missed (applied).
	Deliveries, Events, Missed int
	Outcomes                   map[string]int
	Error                      string // why it failed
	CancelRequested            bool
	CreatedBy                  string // the actor who started it; "sweep" for the sweep
	CreatedAt                  time.Time
	StartedAt, FinishedAt      time.Time // zero until then
	// Pages pulled and time run over all its slices, which the total
	// bounds are of.
	Pages  int
	RanFor time.Duration
	// At is where its next slice starts.
	At Position
}

// Position is where a job's next slice starts: the object type (the first
// when ""), and the sub-window its pulls cover from From (the window's
// start when zero), Span long (the rest of the window when 0). A slice
// that ran out within a sub-window gives it back halved, from its start.
type Position struct {
	ObjectType string
	From       time.Time
	Span       time.Duration
}

// Ended reports whether the job will not change any more.
func (j Job) Ended() bool { return j.State == Done || j.State == Failed || j.State == Cancelled }

// Progress is what a running job did so far.
type Progress struct {
	Deliveries, Events, Missed int
	Outcomes                   map[string]int
	// Pages pulled and time run, over all its slices.
	Pages  int
	RanFor time.Duration
}

// JobStore keeps backfill jobs.
type JobStore interface {
	// StartBackfill queues a job of the provider over [from, to), audited
	// as started by the context's actor (not for a sweep). ECONFLICT while
	// the provider has one of the same kind (sweep, or operator's) queued
	// or running.
	StartBackfill(ctx context.Context, tenantID, providerID int64, from, to time.Time, objectType string, sweep bool) (Job, error)
	// Backfill returns one job of the tenant, or ENOTFOUND.
	Backfill(ctx context.Context, tenantID, id int64) (Job, error)
	// Backfills lists the provider's jobs, newest first, at most limit.
	Backfills(ctx context.Context, tenantID, providerID int64, limit int) ([]Job, error)
	// CancelBackfill asks a queued or running job to stop (audited); a
	// queued one is cancelled at once. An ended job is an ECONFLICT error.
	CancelBackfill(ctx context.Context, tenantID, id int64) (Job, error)
	// LastSweeps returns, per provider of the tenant with API credentials,
	// its newest ended sweep, by provider id; when none ran yet, a Job with
	// ID 0 that names only the tenant and the provider.
	LastSweeps(ctx context.Context, tenantID int64) (map[int64]Job, error)
}

// JobRunnerStore is what serve's job runner and sweep need: across
// tenants, like the maintenance pass.
type JobRunnerStore interface {
	// ClaimBackfill marks a queued job running and returns it; false when
	// there is none. It takes turns by tenant: of the tenants with a job
	// queued and none running, the one whose latest slice started longest
	// ago (or never), and its oldest sweep, else its oldest job. A job whose
	// node stopped reporting progress for StaleAfter is queued again first.
	ClaimBackfill(ctx context.Context) (Job, bool, error)
	// YieldBackfill gives a running job back to the queue after a slice,
	// with its progress and the position its next slice starts at; a job
	// asked to stop meanwhile is cancelled instead. ECONFLICT when it is
	// no longer running.
	YieldBackfill(ctx context.Context, tenantID, id int64, p Progress, at Position) error
	// ReportBackfill stores a running job's progress and reports whether
	// it was asked to stop.
	ReportBackfill(ctx context.Context, tenantID, id int64, p Progress) (cancel bool, err error)
	// FinishBackfill ends a job: done (err nil), cancelled or failed.
	FinishBackfill(ctx context.Context, tenantID, id int64, p Progress, state JobState, reason string) error
	// SweepsDue lists the providers with API credentials whose newest
	// sweep started before now-every (or never ran) and that have no
	// sweep queued or running, with the time their next sweep starts
	// from: the previous sweep's end minus overlap, or now-every for the
	// first.
	SweepsDue(ctx context.Context, now time.Time, every, overlap time.Duration) ([]SweepDue, error)
}

// SweepDue is a provider whose sweep is due, from From to now.
type SweepDue struct {
	TenantID, ProviderID int64
	From                 time.Time
}

// StaleAfter is how long a running job may go without reporting progress
// before another node takes it over (its node died).
const StaleAfter = 2 * time.Minute
