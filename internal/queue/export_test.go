package queue

import (
	"github.com/nats-io/nats.go"

	"github.com/tidemark/tidemark/domain"
)

// Sealed is the message q's Enqueue would publish for qd, but signed for
// (and on the subject of) signedFor's tenant and provider.
func Sealed(q *Queue, qd, signedFor domain.QueuedDelivery) *nats.Msg {
	data, err := encode(qd)
	if err != nil {
		panic(err)
	}
	return q.keys.seal(q.subject(signedFor.Delivery.TenantID), claimOf(signedFor), data)
}
