package backfill

import (
	"context"
	"log/slog"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
	"github.com/tidemark/tidemark/internal/pull/salesforce"
)

// FieldStore answers which fields a provider's snapshots of an object type
// carry (postgres/recordfields).
type FieldStore interface {
	SnapshotFields(ctx context.Context, tenantID, providerID int64, objectType string) ([]string, error)
}

// NewSources makes the source of each provider kind with an API to pull
// from. A Salesforce source asks for the fields the provider's outbound
// messages carried (its newest snapshot of each type) and reads the
// revision from the provider's revision field, so that a pulled record
// equals the message that brought it.
func NewSources(fields FieldStore, log *slog.Logger) Sources {
	return func(ctx context.Context, p domain.ProviderEndpoint, objectTypes []string, c pull.Credentials) (pull.Source, error) {
		switch p.Kind {
		case "hubspot": // not a provider kind
			return hubspot.New(c, log)
		case "salesforce": // not a provider kind
			var opts []salesforce.Option
			if f := p.Config["revision_field"]; f != "" {
				opts = append(opts, salesforce.WithRevisionField(f))
			}
			for _, ot := range objectTypes {
				names, err := fields.SnapshotFields(ctx, p.TenantID, p.ID, ot)
				if err != nil {
					return nil, err
				}
				opts = append(opts, salesforce.WithFields(ot, names...))
			}
			return salesforce.New(c, log, opts...)
		}
		return nil, domain.Errorf(domain.EINVALID, "provider kind %s has no API to pull from: backfill reads HubSpot and Salesforce", p.Kind)
	}
}
