// Package alerting holds the nouns and rules of built-in alerts: per-tenant
// rules with a threshold and a window, evaluated on one node at a time;
// an alert fires once when its condition starts and resolves once when it
// ends. It imports only the standard library and domain.
package alerting

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Rule names a condition Tidemark watches in every tenant: one file
// each, rule_<name>.go, registered in rules.go (docs/alerts.md).
type Rule string

// Config is a tenant's setting of one rule.
type Config struct {
	Rule      Rule
	Enabled   bool
	Threshold int64
	Window    time.Duration
}

// MinWindow bounds every rule's window from below; EvaluateEvery is how
// often the evaluating node looks (docs/alerts.md).
const (
	MinWindow     = time.Minute
	MaxWindow     = 30 * 24 * time.Hour
	EvaluateEvery = 30 * time.Second
)

// Check validates a setting: a known rule, a threshold of at least 1 and
// a window from MinWindow to MaxWindow; an EINVALID error names what is
// wrong.
func Check(c Config) error {
	switch {
	case !Known(c.Rule):
		return domain.Errorf(domain.ENOTFOUND, "no alert rule %q: the rules are %s", c.Rule, RuleList("and"))
	case c.Threshold < 1:
		return domain.Errorf(domain.EINVALID, "threshold must be at least 1, not %d", c.Threshold)
	case c.Window < MinWindow || c.Window > MaxWindow:
		return domain.Errorf(domain.EINVALID, "window must be from %s to %s, not %s", MinWindow, "30 days", c.Window)
	}
	return nil
}

// State is an alert's state.
type State string

const (
	Firing   State = "firing"
	Resolved State = "resolved"
)

// Alert is one firing of a rule for a subject (a provider, a destination,
// or the tenant as a whole), resolved once its condition ends.
type Alert struct {
	ID        int64
	Rule      Rule
	Provider  string // per-provider rules; "" otherwise
	Subject   string // what the alert is about, unique per rule while firing: a provider name, a destination id, or "" for the tenant
	Summary   string // one sentence, e.g. "crm has sent no authenticated delivery for 6h."
	Value     int64  // what was measured when it fired (or resolved)
	Threshold int64
	Window    time.Duration
	StartedAt time.Time
	// ResolvedAt is nil while the alert fires.
	ResolvedAt *time.Time
}

// State is Firing until the alert resolves.
func (a Alert) State() State {
	if a.ResolvedAt == nil {
		return Firing
	}
	return Resolved
}

// Finding is what one evaluation found true for a rule and subject.
type Finding struct {
	Rule     Rule
	Provider string
	Subject  string
	Summary  string
	Value    int64
}

// Service serves the rules and the alerts of a tenant to the console, the
// API and the CLI.
type Service interface {
	// AlertRules returns every rule's setting, the default where none is
	// stored.
	AlertRules(ctx context.Context, tenantID int64) ([]Config, error)
	// SetAlertRule stores a rule's setting (after Check), audited with the
	// actor of ctx.
	SetAlertRule(ctx context.Context, tenantID int64, c Config) (Config, error)
	// Alerts pages through the tenant's alerts, newest first; state ""
	// means both.
	Alerts(ctx context.Context, tenantID int64, state State, page domain.Page) ([]Alert, domain.PageCursors, error)
	// FiringAlerts returns the alerts firing now, for the banner.
	FiringAlerts(ctx context.Context, tenantID int64) ([]Alert, error)
}
