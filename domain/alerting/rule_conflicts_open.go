package alerting

import (
	"fmt"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// ConflictsOpen: open revision conflicts at or above Threshold, or
// growing by Threshold within Window.
const ConflictsOpen Rule = "conflicts_open"

// conflictsOpen reads the tenant's Count of open conflicts, Part of them
// detected within the window; the value is the open conflicts.
var conflictsOpen = Def{
	Rule:      ConflictsOpen,
	About:     "Open revision conflicts are at or above threshold, or grew by threshold within the window.",
	Threshold: 1,
	Window:    time.Hour,
	Judge: func(r Reading) Verdict {
		v := Verdict{Holds: r.Count >= r.Threshold || r.Part >= r.Threshold, Value: r.Count,
			Summary: fmt.Sprintf("%d revision conflicts are open (threshold %d), %d of them detected in the last %s.",
				r.Count, r.Threshold, r.Part, domain.FormatDuration(r.Window))}
		if r.Count == 1 {
			v.Summary = fmt.Sprintf("1 revision conflict is open (threshold %d), %d detected in the last %s.", r.Threshold, r.Part, domain.FormatDuration(r.Window))
		}
		return v
	},
}
