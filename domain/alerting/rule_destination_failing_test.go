package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestDestinationFailing: a destination paused as failing, or with no 2xx
// for the window; the summary never quotes the answer or the error;
// summaries read as alerts show them.
func TestDestinationFailing(t *testing.T) {
	t.Parallel()
	const target = "https://hooks.example.com/0?<redacted>"
	testJudge(t, alerting.DestinationFailing, []judgeCase{
		{"destination paused as failing", alerting.Reading{Subject: "3", Target: target, Failing: true, Count: 5, Part: 1,
			Reason: "change 7 has not been delivered since 2026-01-01T00:00:00Z: 500 from https://hooks.example.com/0?token=secret"},
			alerting.Verdict{Holds: true, Value: 4, Summary: "Destination 3 (" + target + ") was paused as failing: change 7 has not been delivered since 2026-01-01T00:00:00Z."}},
		{"destination paused with a reason ending in a period", alerting.Reading{Subject: "3", Target: target, Failing: true,
			Reason: "change 7 has not been delivered since 2026-01-01T00:00:00Z."},
			alerting.Verdict{Holds: true, Summary: "Destination 3 (" + target + ") was paused as failing: change 7 has not been delivered since 2026-01-01T00:00:00Z."}},
		{"destination paused without a reason, behind retention", alerting.Reading{Subject: "3", Target: target, Failing: true, Behind: true},
			alerting.Verdict{Holds: true, Summary: "Destination 3 (" + target + ") was paused as failing. It is behind retention: changes it had not taken were removed from the feed and will not be sent."}},
		{"destination with no 2xx for the window", alerting.Reading{Subject: "3", Target: target, Since: ago(20 * time.Minute), Count: 4},
			alerting.Verdict{Holds: true, Value: 4, Summary: "Destination 3 (" + target + ") has answered no attempt with a 2xx for 15m (4 failed attempts)."}},
		{"destination with no 2xx for exactly the window", alerting.Reading{Subject: "3", Target: target, Since: ago(15 * time.Minute), Count: 1},
			alerting.Verdict{Holds: true, Value: 1, Summary: "Destination 3 (" + target + ") has answered no attempt with a 2xx for 15m (1 failed attempts)."}},
		{"destination with a 2xx within the window", alerting.Reading{Subject: "3", Target: target, Since: ago(20 * time.Minute), Count: 4, Part: 1},
			alerting.Verdict{Value: 3, Summary: "Destination 3 (" + target + ") has answered no attempt with a 2xx for 15m (3 failed attempts)."}},
		{"destination failing for less than the window", alerting.Reading{Subject: "3", Target: target, Since: ago(10 * time.Minute), Count: 4},
			alerting.Verdict{Value: 4, Summary: "Destination 3 (" + target + ") has answered no attempt with a 2xx for 15m (4 failed attempts)."}},
		{"destination with no attempt", alerting.Reading{Subject: "3", Target: target, Since: ago(20 * time.Minute)},
			alerting.Verdict{Summary: "Destination 3 (" + target + ") has answered no attempt with a 2xx for 15m (0 failed attempts)."}},
	})
}
