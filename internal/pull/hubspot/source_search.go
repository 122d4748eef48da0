package hubspot

import (
	"context"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
)

// The CRM search API is HubSpot's backfill source.
func init() {
	backfill.Register(backfill.Source{Name: "hubspot-search", Kind: "hubspot", Backfill: true, New: newSearch})
}

// newSearch reads the account the credentials' token belongs to.
func newSearch(_ context.Context, in backfill.SourceInput) (pull.Source, error) {
	s, err := New(in.Credentials, in.Log)
	if err != nil {
		return nil, err // not a typed nil
	}
	return s, nil
}
