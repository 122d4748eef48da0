package domain

import "time"

// ValidateHistoryRetention checks how long accepted revisions and resolved
// conflicts are kept (the latest accepted revision of every record, per
// property for property changes, is kept whatever their age). Like the
// logs, history is kept at least MinRetention.
func ValidateHistoryRetention(retention time.Duration) error {
	if retention < MinRetention {
		return Errorf(EINVALID, "history retention must be at least 7 days (168h), got %s; pass a longer --history-retention", FormatDuration(retention))
	}
	return nil
}
