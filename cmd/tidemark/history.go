package main

import (
	"errors"
	"flag"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// historyRetentionFlag registers --history-retention, of serve and cleanup.
func historyRetentionFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("history-retention", 0, "how long accepted revisions and resolved conflicts are kept, at least 168h "+
		"(default: --retention); each record's latest revision is kept whatever its age")
}

// keepHistory gives the store the --history-retention asked for, if any.
func keepHistory(s cliStore, retention time.Duration) error {
	if retention == 0 {
		return nil
	}
	if err := domain.ValidateHistoryRetention(retention); err != nil {
		return errors.New(domain.ErrorMessage(err))
	}
	s.SetHistoryRetention(retention)
	return nil
}
