package alerting

import "testing"

// TestListed: messages list the rules as before the registry, the last
// one after the conjunction.
func TestListed(t *testing.T) {
	t.Parallel()
	before := []Rule{"provider_silent", "refusals", "conflicts_open", "destination_failing", "queue_backlog", "dead_letters", "reconciliation"}
	for conjunction, want := range map[string]string{
		"and": "provider_silent, refusals, conflicts_open, destination_failing, queue_backlog, dead_letters and reconciliation",
		"or":  "provider_silent, refusals, conflicts_open, destination_failing, queue_backlog, dead_letters or reconciliation",
	} {
		if got := listed(before, conjunction); got != want {
			t.Errorf("listed(%s) = %q, want %q", conjunction, got, want)
		}
	}
	if got := listed([]Rule{"a"}, "or"); got != "a" {
		t.Errorf("listed of one rule: %q", got)
	}
}
