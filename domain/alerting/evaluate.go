package alerting

import (
	"context"
	"time"
)

// Evaluation: every EvaluateEvery one node evaluates every rule of every
// tenant at once. Each rule's measure is taken for every subject (a
// provider, a destination, the tenant); a Finding is a measure whose
// condition holds. In one transaction the evaluation then fires an alert
// for each finding without a firing alert and resolves each firing alert
// whose finding is gone (or whose rule was disabled), writing an
// alert_events row for each; a second evaluation with the same findings
// writes nothing.

// Measure is one rule's measure of one subject of a tenant at an
// evaluation, whether or not its condition holds.
type Measure struct {
	TenantID int64
	Finding
	// Holds is whether the rule's condition holds: a finding.
	Holds     bool
	Threshold int64
	Window    time.Duration
}

// Change is an alert an evaluation fired or resolved.
type Change struct {
	TenantID int64
	Alert    Alert
}

// Evaluation is what one evaluation found and changed.
type Evaluation struct {
	At time.Time
	// Ran is false when another node was evaluating: nothing was done.
	Ran bool
	// Findings counts the findings of every tenant.
	Findings int
	Fired    []Change
	Resolved []Change
}

// Evaluator evaluates every rule of every tenant as of now, on one node
// at a time (see Evaluation.Ran), with what queued mode's stream said.
type Evaluator interface {
	EvaluateAlerts(ctx context.Context, now time.Time, queue QueueFacts) (Evaluation, error)
}

// QueueFact is what queued mode's stream holds of one tenant.
type QueueFact struct {
	TenantID int64
	// Oldest is when the oldest delivery waiting was stored; zero when
	// none waits.
	Oldest time.Time
	// DeadLetters are the tenant's deliveries set aside; LastDead is when
	// the newest of them was (zero without any).
	DeadLetters int64
	LastDead    time.Time
}

// QueueFacts are the facts of the queue rules (queue_backlog,
// dead_letters) at an evaluation. Known is false when the stream could not
// be read: those rules then neither fire nor resolve anything. Outside
// queued mode they are known and empty, so those rules find nothing.
type QueueFacts struct {
	Known   bool
	Tenants []QueueFact
}

// QueueWatcher reads the queue rules' facts from queued mode's stream.
type QueueWatcher interface {
	AlertFacts(ctx context.Context) ([]QueueFact, error)
}
