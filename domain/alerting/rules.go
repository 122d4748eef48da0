package alerting

import (
	"slices"
	"strings"
	"time"
)

// registry holds every rule, in the order pages show them. Adding a rule
// is its file rule_<name>.go with its Def, one entry here, its
// measurement in postgres/alertcheck and its rows in docs/alerts.md
// (docs/development.md, "Adding an alert rule").
var registry = []Def{
	providerSilent, refusals, conflictsOpen, destinationFailing, queueBacklog, deadLetters, reconciliation, cdcAllocation,
}

// Rules lists every rule in the order pages show them.
var Rules = ruleNames(registry)

// Def defines a rule: what it watches, its default setting, and the
// decision on what its statement measured of a subject.
type Def struct {
	Rule Rule
	// About says what the rule watches, in one sentence with its setting's
	// words (docs/alerts.md).
	About string
	// Threshold and Window are the default setting.
	Threshold int64
	Window    time.Duration
	// Queued is set for a rule that measures queued mode's stream
	// (QueueFacts): while the stream cannot be read it neither fires nor
	// resolves.
	Queued bool
	// Judge decides whether the rule's condition holds for a subject, and
	// says so in the alert's value and summary.
	Judge func(Reading) Verdict
}

// Reading is what a rule's statement measured of one subject of a tenant
// at an evaluation, with the tenant's setting of the rule. Each rule's
// file says which of the measured fields (from Count on) it fills; the
// others stay zero.
type Reading struct {
	TenantID  int64
	Provider  string // the provider of a per-provider rule
	Subject   string // a provider's name, a destination's id, or "" for the tenant
	Threshold int64
	Window    time.Duration
	// Now is the evaluation's time, up to which everything is measured.
	Now time.Time

	// Count is what the rule counts; Part how many of them pass its second
	// test.
	Count, Part int64
	// Since is when what the rule times began; Last the newest of what it
	// watches, zero when there is none.
	Since, Last time.Time
	// Target names a destination (its redacted URL); Failing, Reason and
	// Behind are its pause as failing, the sender's reason and whether
	// it is behind the feed's retention.
	Target  string
	Failing bool
	Reason  string
	Behind  bool
	// Allocation is a limit Count is measured against.
	Allocation int64
}

// Verdict is a rule's decision on a Reading: whether its condition
// holds, the alert's value and its one-sentence summary.
type Verdict struct {
	Holds   bool
	Value   int64
	Summary string
}

// Default is the rule's setting until an owner changes it: enabled, with
// the documented threshold and window.
func (d Def) Default() Config {
	return Config{Rule: d.Rule, Enabled: true, Threshold: d.Threshold, Window: d.Window}
}

// Measure judges r: the rule's measure of r's subject.
func (d Def) Measure(r Reading) Measure {
	v := d.Judge(r)
	return Measure{
		TenantID:  r.TenantID,
		Finding:   Finding{Rule: d.Rule, Provider: r.Provider, Subject: r.Subject, Summary: v.Summary, Value: v.Value},
		Holds:     v.Holds,
		Threshold: r.Threshold,
		Window:    r.Window,
	}
}

// Defs returns every rule's definition, in the order of Rules.
func Defs() []Def { return slices.Clone(registry) }

// Lookup returns rule r's definition; ok is false when r is no rule.
func Lookup(r Rule) (d Def, ok bool) {
	i := slices.IndexFunc(registry, func(d Def) bool { return d.Rule == r })
	if i < 0 {
		return Def{}, false
	}
	return registry[i], true
}

// Known reports whether r is a rule.
func Known(r Rule) bool {
	_, ok := Lookup(r)
	return ok
}

// Default is a rule's setting until an owner changes it: every rule is
// enabled with the documented threshold and window.
func Default(r Rule) Config {
	if d, ok := Lookup(r); ok {
		return d.Default()
	}
	return Config{Rule: r, Enabled: true, Threshold: 1, Window: 15 * time.Minute}
}

// About says what a rule watches, in one sentence with its setting's
// words (docs/alerts.md); "" for no rule.
func About(r Rule) string {
	d, _ := Lookup(r)
	return d.About
}

// RuleList names every rule for a message, the last one after
// conjunction: "provider_silent, refusals, … and reconciliation".
func RuleList(conjunction string) string { return listed(Rules, conjunction) }

func listed(rules []Rule, conjunction string) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = string(r)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " " + conjunction + " " + names[last]
}

func ruleNames(defs []Def) []Rule {
	rules := make([]Rule, len(defs))
	for i, d := range defs {
		rules[i] = d.Rule
	}
	return rules
}
