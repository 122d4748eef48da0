package backfill

import (
	"log/slog"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
)

// NewSources makes the source of each provider kind with an API to pull
// from.
func NewSources(log *slog.Logger) Sources {
	return func(kind string, c pull.Credentials) (pull.Source, error) {
		switch kind {
		case "hubspot": // not a provider kind
			return hubspot.New(c, log)
		}
		return nil, domain.Errorf(domain.EINVALID, "provider kind %s has no API to pull from: backfill reads HubSpot and Salesforce", kind)
	}
}
