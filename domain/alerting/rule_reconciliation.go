package alerting

import (
	"fmt"
	"time"
)

// Reconciliation: the last reconciliation found violations in the
// tenant.
const Reconciliation Rule = "reconciliation"

// reconciliation reads the Count of the tenant's violations in the last
// reconciliation report (none before the first report); the value is that
// count. The window is unused.
var reconciliation = Def{
	Rule:      Reconciliation,
	About:     "The last reconciliation (tidemark audit) found violations in the workspace.",
	Threshold: 1,
	Window:    15 * time.Minute,
	Judge: func(r Reading) Verdict {
		v := Verdict{Holds: r.Count >= r.Threshold, Value: r.Count,
			Summary: fmt.Sprintf("The last reconciliation found %d violations in this tenant (see tidemark audit).", r.Count)}
		if r.Count == 1 {
			v.Summary = "The last reconciliation found 1 violation in this tenant (see tidemark audit)."
		}
		return v
	},
}
