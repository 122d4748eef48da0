package alerting_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestRefusals: refusals at or above the threshold; summaries read as
// alerts show them.
func TestRefusals(t *testing.T) {
	t.Parallel()
	testJudge(t, alerting.Refusals, []judgeCase{
		{"refusals over the threshold", alerting.Reading{Provider: "crm", Count: 25},
			alerting.Verdict{Holds: true, Value: 25, Summary: "25 refused deliveries from crm in 5m (threshold 20)."}},
		{"refusals at the threshold", alerting.Reading{Provider: "crm", Count: 20},
			alerting.Verdict{Holds: true, Value: 20, Summary: "20 refused deliveries from crm in 5m (threshold 20)."}},
		{"refusals under the threshold", alerting.Reading{Provider: "crm", Count: 19},
			alerting.Verdict{Value: 19, Summary: "19 refused deliveries from crm in 5m (threshold 20)."}},
	})
}
