package salesforce

import (
	"context"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
)

// The REST query API is Salesforce's backfill source.
func init() {
	backfill.Register(backfill.Source{Name: "salesforce-query", Kind: "salesforce", Backfill: true, New: newQuery})
}

// newQuery asks for the fields the provider's outbound messages carried
// (its newest snapshot of each type) and reads the revision from the
// provider's revision field, so that a pulled record equals the message
// that brought it.
func newQuery(ctx context.Context, in backfill.SourceInput) (pull.Source, error) {
	var opts []Option
	if f := in.Provider.Config["revision_field"]; f != "" {
		opts = append(opts, WithRevisionField(f))
	}
	for _, ot := range in.ObjectTypes {
		names, err := in.Fields.SnapshotFields(ctx, in.Provider.TenantID, in.Provider.ID, ot)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithFields(ot, names...))
	}
	s, err := New(in.Credentials, in.Log, opts...)
	if err != nil {
		return nil, err // not a typed nil
	}
	return s, nil
}
