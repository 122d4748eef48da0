package alerting

import (
	"fmt"
	"time"
)

// DeadLetters (queued mode): any dead letter within Window.
const DeadLetters Rule = "dead_letters"

// deadLetters reads, of a tenant with dead letters in queued mode's
// stream, their Count and when the Last of them was set aside; the value
// is that count.
var deadLetters = Def{
	Rule:      DeadLetters,
	About:     "Queued mode: a delivery became a dead letter within the window.",
	Threshold: 1,
	Window:    time.Hour,
	Queued:    true,
	Judge: func(r Reading) Verdict {
		return Verdict{Holds: !r.Last.Before(r.Now.Add(-r.Window)), Value: r.Count,
			Summary: fmt.Sprintf("A queued delivery became a dead letter %s ago (%d held in the dead-letter stream).",
				max(r.Now.Sub(r.Last), 0).Round(time.Second), r.Count)}
	},
}
