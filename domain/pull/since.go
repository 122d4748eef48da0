package pull

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// MaxSince is the widest window a backfill pulls: further back, the
// providers' change history (and the events' idempotency keys) are gone.
const MaxSince = 90 * 24 * time.Hour

// The audit log's actions of backfill jobs an operator starts and
// cancels; the sweep's jobs are not recorded.
const (
	AuditBackfillStart  = "backfill_start"
	AuditBackfillCancel = "backfill_cancel"
)

// ParseSince reads how far back a backfill starts: a Go duration ("72h",
// "90m") or whole hours ("72"), positive and at most MaxSince. Anything
// else is an EINVALID error saying what is accepted.
func ParseSince(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, domain.Errorf(domain.EINVALID, `since is required: how far back to pull, such as "72h" or 72 (hours), at most 90 days`)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		hours, herr := strconv.ParseInt(s, 10, 64)
		if herr != nil || hours > int64(MaxSince/time.Hour) {
			return 0, domain.Errorf(domain.EINVALID, `since %q is neither a duration such as "72h" nor a whole number of hours, at most 90 days`, s)
		}
		d = time.Duration(hours) * time.Hour
	}
	if d <= 0 || d > MaxSince {
		return 0, domain.Errorf(domain.EINVALID, "since %q must be more than 0 and at most 90 days (2160h)", s)
	}
	return d, nil
}
