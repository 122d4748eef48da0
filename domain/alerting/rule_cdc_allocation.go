package alerting

import (
	"fmt"
	"time"
)

// CDCAllocation: a Change Data Capture stream's org has used Threshold
// percent or more of its daily event delivery allocation.
const CDCAllocation Rule = "cdc_allocation"

// cdcAllocation reads, per provider whose stream is on, Count the
// deliveries its org used over the last 24 hours, Allocation their daily
// allocation, and Last when its subscriber read them (zero before). A
// reading older than the window does not hold: a stream nobody subscribes
// to reads nothing, and provider_silent watches that. The value is the
// percent used.
var cdcAllocation = Def{
	Rule:      CDCAllocation,
	About:     "A Change Data Capture stream's org has used threshold percent or more of its daily event delivery allocation, as read within the window (one alert per provider).",
	Threshold: 80,
	Window:    time.Hour,
	Judge: func(r Reading) Verdict {
		if r.Allocation <= 0 || r.Last.IsZero() {
			return Verdict{Summary: fmt.Sprintf("%s: the org's event delivery allocation has not been read.", r.Provider)}
		}
		percent := r.Count * 100 / r.Allocation
		fresh := r.Now.Sub(r.Last) <= r.Window
		return Verdict{Holds: fresh && percent >= r.Threshold, Value: percent,
			Summary: fmt.Sprintf("%s: the org has used %d%% of its daily event delivery allocation (%d of %d; threshold %d%%); "+
				"at 100%% Salesforce stops delivering change events until the rolling 24 hours free some.",
				r.Provider, percent, r.Count, r.Allocation, r.Threshold)}
	},
}
