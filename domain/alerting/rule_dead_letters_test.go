package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestDeadLetters: the newest dead letter was set aside within the window;
// summaries read as alerts show them.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	if d, _ := alerting.Lookup(alerting.DeadLetters); !d.Queued {
		t.Error("a rule of queued mode's stream is not Queued")
	}
	testJudge(t, alerting.DeadLetters, []judgeCase{
		{"a recent dead letter", alerting.Reading{Count: 3, Last: ago(10 * time.Minute)},
			alerting.Verdict{Holds: true, Value: 3, Summary: "A queued delivery became a dead letter 10m0s ago (3 held in the dead-letter stream)."}},
		{"a dead letter the window passed", alerting.Reading{Count: 3, Last: ago(2 * time.Hour)},
			alerting.Verdict{Value: 3, Summary: "A queued delivery became a dead letter 2h0m0s ago (3 held in the dead-letter stream)."}},
	})
}
