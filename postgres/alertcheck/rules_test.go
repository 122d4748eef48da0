package alertcheck

import (
	"testing"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestEveryRuleMeasured: every rule registered in domain/alerting has its
// measurement here and every measurement a registered rule; a rule of
// queued mode's stream takes its arguments from the stream's facts, and
// no other does.
func TestEveryRuleMeasured(t *testing.T) {
	t.Parallel()
	for _, d := range alerting.Defs() {
		m, ok := measurements[d.Rule]
		switch {
		case !ok:
			t.Errorf("rule %s has no measurement: add postgres/alertcheck/rule_%s.go", d.Rule, d.Rule)
		case m.sql == "" || m.scan == nil:
			t.Errorf("rule %s: its measurement lacks a statement or a scan", d.Rule)
		case d.Queued != (m.fromFacts != nil):
			t.Errorf("rule %s: Queued is %t but its measurement takes arguments from the stream's facts: %t", d.Rule, d.Queued, m.fromFacts != nil)
		}
	}
	for r := range measurements {
		if !alerting.Known(r) {
			t.Errorf("measurement of %q, which is no rule registered in domain/alerting", r)
		}
	}
}
