package domain

import "context"

// IngestService is what webhook receivers need from storage.
type IngestService interface {
	// Endpoint returns the provider with its secrets and scopes, or an
	// ENOTFOUND error when the tenant or provider does not exist.
	Endpoint(ctx context.Context, tenantSlug, providerName string) (ProviderEndpoint, error)
	// Ingest records the delivery and decides and stores the outcome of each
	// event, in order, in one transaction. Nothing is stored on error.
	Ingest(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event) ([]Result, error)
	// LogDelivery records a delivery that carried no usable events.
	LogDelivery(ctx context.Context, d Delivery) error
}

// QueryService answers the JSON API for one tenant. Every method returns an
// ENOTFOUND error for anything outside that tenant.
type QueryService interface {
	// TenantForToken returns the tenant an API token belongs to, or an
	// EUNAUTHORIZED error for an unknown or revoked token.
	TenantForToken(ctx context.Context, token string) (Tenant, error)
	Record(ctx context.Context, tenantID int64, ref RecordRef) (Record, error)
	Revisions(ctx context.Context, tenantID int64, ref RecordRef, page Page) ([]Revision, string, error)
	Events(ctx context.Context, tenantID int64, f EventFilter, page Page) ([]LoggedEvent, string, error)
	// Stats counts outcomes over all time from the counters; provider may be
	// empty for all providers.
	Stats(ctx context.Context, tenantID int64, provider string) (map[Outcome]int64, error)
	Conflicts(ctx context.Context, tenantID int64, status string, page Page) ([]Conflict, string, error)
	// ResolveConflict keeps or adopts the conflicting snapshot. Adopting
	// returns an ECONFLICT error when the record has moved past the revision.
	ResolveConflict(ctx context.Context, tenantID, conflictID int64, resolution, note, by string) (Conflict, error)
}
