package queue

import (
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark/domain"
)

// envelopeVersion is the version of the message format written now. A
// worker refuses (and keeps retrying) a version it does not know, so
// workers are upgraded before the serve nodes that publish; a worker leaves
// such a message for another.
const envelopeVersion = 1

// envelope is a queued delivery as published: JSON of the domain's own
// Delivery and Event, so that every field the synchronous ingest reads
// (the delivery's receipt time and verdict, each event's ids, revision,
// snapshot and raw payload) reaches the worker unchanged. The events are
// stored as parsed at receipt, not re-parsed by the worker: parsing needs
// the request's headers and the provider's settings of that moment, and
// synchronous mode decides on those, so a queued delivery is applied as it
// would have been when it arrived. TestEnvelopeRoundTrip keeps every field
// of both types carried. It travels sealed (seal.go): encrypted, and
// signed for its subject, tenant and provider.
type envelope struct {
	V        int             `json:"v"`
	Tenant   string          `json:"tenant"`
	Provider string          `json:"provider"`
	Kind     string          `json:"kind"`
	Delivery domain.Delivery `json:"delivery"`
	Events   []domain.Event  `json:"events"`
}

func encode(qd domain.QueuedDelivery) ([]byte, error) {
	return json.Marshal(envelope{V: envelopeVersion, Tenant: qd.TenantSlug, Provider: qd.ProviderName, Kind: qd.ProviderKind,
		Delivery: qd.Delivery, Events: qd.Events})
}

// errVersion is a message written by a newer Tidemark.
type errVersion int

func (v errVersion) Error() string {
	return fmt.Sprintf("queued message of format version %d, newer than this worker's %d: upgrade the worker", int(v), envelopeVersion)
}

func decode(data []byte) (domain.QueuedDelivery, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return domain.QueuedDelivery{}, fmt.Errorf("unreadable queued message: %w", err)
	}
	if env.V != envelopeVersion {
		return domain.QueuedDelivery{}, errVersion(env.V)
	}
	return domain.QueuedDelivery{Delivery: env.Delivery, TenantSlug: env.Tenant, ProviderName: env.Provider,
		ProviderKind: env.Kind, Events: env.Events}, nil
}

// claimOf is whom qd is for, as its message's headers say.
func claimOf(qd domain.QueuedDelivery) claim {
	return claim{TenantID: qd.Delivery.TenantID, TenantSlug: qd.TenantSlug, ProviderID: qd.Delivery.ProviderID, ProviderName: qd.ProviderName}
}
