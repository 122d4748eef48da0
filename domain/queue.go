package domain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// QueuedDelivery is an authenticated, parsed delivery waiting in the
// delivery queue (serve --queue) for a worker to ingest it: exactly what
// synchronous mode would have passed to IngestService.Ingest, plus the
// names the worker looks the endpoint up by.
type QueuedDelivery struct {
	Delivery     Delivery // its id, tenant, provider, receipt time and signature verdict
	TenantSlug   string
	ProviderName string
	ProviderKind string
	Events       []Event // as the receiver parsed them, numbered
	// Identity names the delivery across its provider's retries
	// (DeliveryIdentity): the queue stores one delivery per identity
	// within its duplicate window.
	Identity string
}

// QueueState is what waits in the delivery queue.
type QueueState struct {
	Depth  int64     // deliveries stored and not yet applied
	Oldest time.Time // when the oldest of them was stored; zero when none waits
	// DeadLetters are deliveries set aside after failing too often; only
	// counted for the whole queue.
	DeadLetters int64
}

// DeliveryQueue is the durable buffer of queued mode.
type DeliveryQueue interface {
	// Enqueue stores qd and returns once the queue acknowledged storing it.
	// duplicate is true when it already held a delivery of the same
	// Identity within its duplicate window, and stored nothing. An
	// unreachable queue, or one that did not acknowledge in time, is an
	// EUNAVAILABLE error: nothing may be assumed stored.
	Enqueue(ctx context.Context, qd QueuedDelivery) (duplicate bool, err error)
	// State returns what waits for the tenant, or for every tenant when
	// tenantID is 0; EUNAVAILABLE when the queue cannot be reached.
	State(ctx context.Context, tenantID int64) (QueueState, error)
}

// QueueStore is what a queue worker needs from storage: the ingest of
// synchronous mode, and a way to tell a redelivered message whose delivery
// was already committed.
type QueueStore interface {
	IngestService
	// DeliveryRecorded reports whether the tenant's delivery log holds the
	// delivery with that id and receipt time.
	DeliveryRecorded(ctx context.Context, tenantID int64, id string, receivedAt time.Time) (bool, error)
	// ErasureChecker: a queued delivery's events of a record or lead
	// erased after its receipt are dropped (DropErased), not applied.
	ErasureChecker
}

// DeliveryIdentity is what makes a provider's retry the same delivery: the
// tenant, the provider, the ids of its events (the provider's own: a
// Standard Webhooks webhook-id, HubSpot eventIds, Salesforce notification
// Ids) and the body. A retry changes only what the signature covers
// (timestamp and signature headers), so it has the same identity; the same
// event id with other content (an event_conflict) does not.
func DeliveryIdentity(tenantID, providerID int64, body []byte, events []Event) string {
	h := sha256.New()
	var n [8]byte
	for _, v := range []int64{tenantID, providerID, int64(len(body))} {
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	h.Write(body)
	for _, e := range events {
		binary.BigEndian.PutUint64(n[:], uint64(len(e.EventID)))
		h.Write(n[:])
		h.Write([]byte(e.EventID))
	}
	return hex.EncodeToString(h.Sum(nil))
}
