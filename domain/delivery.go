package domain

import (
	"context"
	"time"
)

// Signature verdicts stored with each delivery.
const (
	SignatureValid     = "valid"
	SignatureInvalid   = "invalid"
	SignatureMissing   = "missing"
	SignatureExpired   = "expired"
	SignatureUnchecked = "unchecked" // rejected before the signature could be checked (oversize)
)

// Delivery is one HTTP request from a provider.
type Delivery struct {
	ID         string // UUIDv7, time-ordered
	TenantID   int64
	ProviderID int64
	ReceivedAt time.Time
	Status     int
	Signature  string
	Reason     string
	Body       []byte // kept only when the signature was valid but the body unusable
}

// DeliveryBrief is what the console shows of one delivery.
type DeliveryBrief struct {
	ID         string
	Provider   string
	ReceivedAt time.Time
	Status     int
	Signature  string
	Reason     string
	EventCount int
}

// IngestService is what webhook receivers need from storage.
type IngestService interface {
	// Endpoint returns the provider with its secrets and scopes, or an
	// ENOTFOUND error when the tenant or provider does not exist.
	Endpoint(ctx context.Context, tenantSlug, providerName string) (ProviderEndpoint, error)
	// Ingest records the delivery and decides and stores the outcome of each
	// event, in order, in one transaction. Nothing is stored on error.
	Ingest(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event) ([]Result, error)
	// LogRefusals records refused deliveries in one round trip: each count
	// is added to its provider's DeliveryRejected counter for its hour, and
	// each sample is kept with its reason for the console. Counts and
	// samples of a provider that no longer exists are dropped.
	LogRefusals(ctx context.Context, counts []RefusalCount, samples []Delivery) error
}

// RefusalCount is how many deliveries of one provider were refused within
// one hour.
type RefusalCount struct {
	TenantID   int64
	ProviderID int64
	Hour       time.Time // the start of the hour, UTC
	N          int64
}
