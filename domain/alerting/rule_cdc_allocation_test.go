package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestCDCAllocation: the share of the org's delivery allocation used, at
// or above the threshold, as read within the window.
func TestCDCAllocation(t *testing.T) {
	t.Parallel()
	now := judgeNow
	const tail = "; at 100% Salesforce stops delivering change events until the rolling 24 hours free some."
	testJudge(t, alerting.CDCAllocation, []judgeCase{
		{"at the threshold", alerting.Reading{Provider: "sf", Now: now, Count: 40_000, Allocation: 50_000, Last: now.Add(-time.Minute)},
			alerting.Verdict{Holds: true, Value: 80, Summary: "sf: the org has used 80% of its daily event delivery allocation (40000 of 50000; threshold 80%)" + tail}},
		{"under it", alerting.Reading{Provider: "sf", Now: now, Count: 39_000, Allocation: 50_000, Last: now.Add(-time.Minute)},
			alerting.Verdict{Value: 78, Summary: "sf: the org has used 78% of its daily event delivery allocation (39000 of 50000; threshold 80%)" + tail}},
		{"read before the window", alerting.Reading{Provider: "sf", Now: now, Count: 50_000, Allocation: 50_000, Last: now.Add(-2 * time.Hour)},
			alerting.Verdict{Value: 100, Summary: "sf: the org has used 100% of its daily event delivery allocation (50000 of 50000; threshold 80%)" + tail}},
		{"never read", alerting.Reading{Provider: "sf", Now: now},
			alerting.Verdict{Summary: "sf: the org's event delivery allocation has not been read."}},
	})
}
