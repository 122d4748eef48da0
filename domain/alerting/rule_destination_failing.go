package alerting

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// DestinationFailing: a destination with no 2xx for Window, or paused as
// failing.
const DestinationFailing Rule = "destination_failing"

// destinationFailing reads, per destination an owner has not paused (the
// Subject is its id): its Target, whether the sender paused it as Failing
// (with its Reason, and Behind retention), Since its last 2xx (else its
// creation), and its Count of attempts within the window, Part of them
// 2xx. It holds for a destination paused as failing, or active with
// attempts within the window, none of them 2xx, and no 2xx for the
// window; the value is the failed attempts within the window.
//
// Every member, every token, the log and the alert destinations read the
// summary: it names the destination by its redacted target (its URL is its
// owners'), and of the status reason only which message has not been
// delivered since when, not the receiver's answer or the error.
var destinationFailing = Def{
	Rule:      DestinationFailing,
	About:     "A destination has had no 2xx answer for the window, or was paused as failing.",
	Threshold: 1,
	Window:    15 * time.Minute,
	Judge: func(r Reading) Verdict {
		v := Verdict{Value: r.Count - r.Part}
		if !r.Failing {
			v.Holds = r.Count > 0 && r.Part == 0 && !r.Since.After(r.Now.Add(-r.Window))
			v.Summary = fmt.Sprintf("Destination %s (%s) has answered no attempt with a 2xx for %s (%d failed attempts).",
				r.Subject, r.Target, domain.FormatDuration(r.Window), v.Value)
			return v
		}
		v.Holds = true
		// postgres/outbound writes "change N has not been delivered since
		// T: error"; T has no ": ".
		undelivered, _, _ := strings.Cut(r.Reason, ": ")
		v.Summary = fmt.Sprintf("Destination %s (%s) was paused as failing: %s.", r.Subject, r.Target, strings.TrimRight(undelivered, "."))
		if r.Reason == "" {
			v.Summary = fmt.Sprintf("Destination %s (%s) was paused as failing.", r.Subject, r.Target)
		}
		if r.Behind {
			v.Summary += " It is behind retention: changes it had not taken were removed from the feed and will not be sent."
		}
		return v
	},
}
