package alerting_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestConflictsOpen: open conflicts, or those detected within the window,
// at or above the threshold; summaries read as alerts show them.
func TestConflictsOpen(t *testing.T) {
	t.Parallel()
	testJudge(t, alerting.ConflictsOpen, []judgeCase{
		{"one conflict", alerting.Reading{Count: 1, Part: 1},
			alerting.Verdict{Holds: true, Value: 1, Summary: "1 revision conflict is open (threshold 1), 1 detected in the last 1h."}},
		{"conflicts at the threshold", alerting.Reading{Threshold: 3, Count: 3},
			alerting.Verdict{Holds: true, Value: 3, Summary: "3 revision conflicts are open (threshold 3), 0 of them detected in the last 1h."}},
		{"conflicts grew by the threshold", alerting.Reading{Threshold: 2, Count: 1, Part: 2},
			alerting.Verdict{Holds: true, Value: 1, Summary: "1 revision conflict is open (threshold 2), 2 detected in the last 1h."}},
		{"conflicts under the threshold", alerting.Reading{Threshold: 5, Count: 4, Part: 2},
			alerting.Verdict{Value: 4, Summary: "4 revision conflicts are open (threshold 5), 2 of them detected in the last 1h."}},
		{"no conflict", alerting.Reading{},
			alerting.Verdict{Summary: "0 revision conflicts are open (threshold 1), 0 of them detected in the last 1h."}},
	})
}
