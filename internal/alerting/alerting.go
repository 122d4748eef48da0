// Package alerting runs the alert evaluator of a node: every
// alerting.EvaluateEvery it asks the store to evaluate every rule of every
// tenant (domain/alerting). Every node of an installation runs one; the
// store's evaluation holds a session advisory lock while it evaluates, so
// one node at a time evaluates and the others' turns do nothing.
package alerting

import (
	"context"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// Evaluator evaluates the alert rules on a schedule.
type Evaluator struct {
	Store alerting.Evaluator
	// Now is the evaluation's clock (default time.Now); tests call
	// Evaluate with the time they want instead.
	Now func() time.Time
	// Every is how often it evaluates (default alerting.EvaluateEvery).
	Every time.Duration
	// Queue is queued mode's stream, for the queue rules; nil outside
	// queued mode.
	Queue alerting.QueueWatcher
	// OnFired, when set, is told of every alert that fired (after it was
	// stored): a provider that went silent starts a backfill sweep.
	OnFired func(ctx context.Context, c alerting.Change)
	Log     *slog.Logger
}

// Run evaluates at once and then every Every until ctx ends. An
// evaluation that fails is logged; the next one tries again.
func (e Evaluator) Run(ctx context.Context) error {
	now, every, log := e.Now, e.Every, e.logger()
	if now == nil {
		now = time.Now
	}
	if every <= 0 {
		every = alerting.EvaluateEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ev, err := e.Evaluate(ctx, now())
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Error("alert evaluation failed; trying again at the next one", "err", err)
		default:
			for _, c := range ev.Fired {
				log.Info("alert fired", "tenant_id", c.TenantID, "alert", c.Alert.ID, "rule", c.Alert.Rule, "summary", c.Alert.Summary)
				if e.OnFired != nil {
					e.OnFired(ctx, c)
				}
			}
			for _, c := range ev.Resolved {
				log.Info("alert resolved", "tenant_id", c.TenantID, "alert", c.Alert.ID, "rule", c.Alert.Rule, "value", c.Alert.Value)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Evaluate runs one evaluation as of now: the one a test calls with the
// time it controls. Ran is false in its answer when another node was
// evaluating.
func (e Evaluator) Evaluate(ctx context.Context, now time.Time) (alerting.Evaluation, error) {
	facts := alerting.QueueFacts{Known: true}
	if e.Queue != nil {
		tenants, err := e.Queue.AlertFacts(ctx)
		if err != nil {
			// The queue rules wait for a stream that answers; the others
			// are evaluated as usual.
			e.logger().WarnContext(ctx, "the queue rules are not evaluated: the stream cannot be read", "err", err)
			facts.Known = false
		}
		facts.Tenants = tenants
	}
	return e.Store.EvaluateAlerts(ctx, now, facts)
}

func (e Evaluator) logger() *slog.Logger {
	if e.Log == nil {
		return slog.Default()
	}
	return e.Log
}
