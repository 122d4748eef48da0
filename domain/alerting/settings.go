package alerting

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// AuditRuleSet is the audit action of an owner's change of a rule's
// setting; its target is RuleLabel, its summary the setting and what it
// was.
const AuditRuleSet = "alert_rule_set"

// RuleLabel names a rule as an audit target: "alert rule refusals".
func RuleLabel(r Rule) string { return "alert rule " + string(r) }

// Describe sums up a setting for the audit log and the CLI:
// "enabled, threshold 20, window 5m0s".
func Describe(c Config) string {
	state := "enabled"
	if !c.Enabled {
		state = "disabled"
	}
	return fmt.Sprintf("%s, threshold %d, window %s", state, c.Threshold, c.Window)
}

// ParseWindow reads a window as a Go duration ("90s", "5m", "6h"); an
// EINVALID error names the field.
func ParseWindow(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, domain.Errorf(domain.EINVALID, "window must be a duration such as 90s, 5m or 6h, not %q", s)
	}
	return d, nil
}

// ParseState reads a state filter: "", firing or resolved.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case "", Firing, Resolved:
		return st, nil
	}
	return "", domain.Errorf(domain.EINVALID, "state must be firing or resolved, not %q", s)
}
