package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestQueueBacklog: the oldest queued delivery is at least the window old;
// summaries read as alerts show them.
func TestQueueBacklog(t *testing.T) {
	t.Parallel()
	if d, _ := alerting.Lookup(alerting.QueueBacklog); !d.Queued {
		t.Error("a rule of queued mode's stream is not Queued")
	}
	testJudge(t, alerting.QueueBacklog, []judgeCase{
		{"queue behind", alerting.Reading{Since: ago(20*time.Minute + 300*time.Millisecond)},
			alerting.Verdict{Holds: true, Value: 1200, Summary: "The oldest queued delivery has waited 20m0s, longer than 15m0s: the queue workers are behind or stopped."}},
		{"queue within the window", alerting.Reading{Since: ago(5 * time.Minute)},
			alerting.Verdict{Value: 300, Summary: "The oldest queued delivery has waited 5m0s, longer than 15m0s: the queue workers are behind or stopped."}},
	})
}
