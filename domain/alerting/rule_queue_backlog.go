package alerting

import (
	"fmt"
	"time"
)

// QueueBacklog (queued mode): the tenant's oldest queued delivery is
// older than Window.
const QueueBacklog Rule = "queue_backlog"

// queueBacklog reads, of a tenant with a delivery waiting in queued
// mode's stream, Since when the oldest of them was stored; the value is
// its age in seconds.
var queueBacklog = Def{
	Rule:      QueueBacklog,
	About:     "Queued mode: the oldest queued delivery of the workspace is older than the window.",
	Threshold: 1,
	Window:    15 * time.Minute,
	Queued:    true,
	Judge: func(r Reading) Verdict {
		age := max(r.Now.Sub(r.Since), 0)
		return Verdict{Holds: age >= r.Window, Value: int64(age / time.Second),
			Summary: fmt.Sprintf("The oldest queued delivery has waited %s, longer than %s: the queue workers are behind or stopped.",
				age.Round(time.Second), r.Window)}
	},
}
