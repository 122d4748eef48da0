package alerting

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Refusals: at least Threshold refused deliveries of a provider within
// Window (bad signature, token, timestamp or body).
const Refusals Rule = "refusals"

// refusals reads, per provider, the Count of its refused deliveries within
// the window; the value is that count.
var refusals = Def{
	Rule:      Refusals,
	About:     "At least threshold deliveries of a provider were refused (bad signature, token, timestamp or body) within the window.",
	Threshold: 20,
	Window:    5 * time.Minute,
	Judge: func(r Reading) Verdict {
		return Verdict{Holds: r.Count >= r.Threshold, Value: r.Count,
			Summary: fmt.Sprintf("%d refused deliveries from %s in %s (threshold %d).", r.Count, r.Provider, domain.FormatDuration(r.Window), r.Threshold)}
	},
}
