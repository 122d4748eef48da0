package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestProviderSilent: a provider is silent for the window since the later
// of its connection and its last authenticated delivery; summaries read as
// alerts show them.
func TestProviderSilent(t *testing.T) {
	t.Parallel()
	testJudge(t, alerting.ProviderSilent, []judgeCase{
		{"silent since the last delivery", alerting.Reading{Provider: "crm", Since: ago(30 * 24 * time.Hour), Last: ago(7 * time.Hour)},
			alerting.Verdict{Holds: true, Value: 7 * 3600, Summary: "crm has sent no authenticated delivery for 6h."}},
		{"silent for exactly the window", alerting.Reading{Provider: "crm", Since: ago(7 * time.Hour), Last: ago(6 * time.Hour)},
			alerting.Verdict{Holds: true, Value: 6 * 3600, Summary: "crm has sent no authenticated delivery for 6h."}},
		{"delivered within the window", alerting.Reading{Provider: "crm", Since: ago(30 * time.Hour), Last: ago(time.Hour)},
			alerting.Verdict{Value: 3600, Summary: "crm has sent no authenticated delivery for 6h."}},
		{"never delivered", alerting.Reading{Provider: "erp", Since: ago(7*time.Hour + 400*time.Millisecond)},
			alerting.Verdict{Holds: true, Value: 7 * 3600, Summary: "erp has sent no authenticated delivery since it was connected 7h0m0s ago."}},
		{"connected within the window", alerting.Reading{Provider: "erp", Since: ago(time.Hour)},
			alerting.Verdict{Value: 3600, Summary: "erp has sent no authenticated delivery since it was connected 1h0m0s ago."}},
		{"connected after now", alerting.Reading{Provider: "erp", Since: judgeNow.Add(time.Minute)},
			alerting.Verdict{Summary: "erp has sent no authenticated delivery since it was connected 0s ago."}},
	})
}
