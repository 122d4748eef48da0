package alerting_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestReconciliation: the last report names violations at or above the
// threshold; summaries read as alerts show them.
func TestReconciliation(t *testing.T) {
	t.Parallel()
	testJudge(t, alerting.Reconciliation, []judgeCase{
		{"violations", alerting.Reading{Count: 2},
			alerting.Verdict{Holds: true, Value: 2, Summary: "The last reconciliation found 2 violations in this tenant (see tidemark audit)."}},
		{"one violation", alerting.Reading{Count: 1},
			alerting.Verdict{Holds: true, Value: 1, Summary: "The last reconciliation found 1 violation in this tenant (see tidemark audit)."}},
		{"no violation", alerting.Reading{},
			alerting.Verdict{Summary: "The last reconciliation found 0 violations in this tenant (see tidemark audit)."}},
	})
}
