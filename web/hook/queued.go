package hook

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/httpx"
)

// enqueue finishes a delivery in queued mode (serve --queue): authenticated
// and parsed like any other (refusals are answered as in synchronous mode,
// before this), it is stored in the delivery queue for a worker instead of
// ingested, and acknowledged only once the queue acknowledged storing it.
// A queue that cannot be reached answers 503: a delivery is never ingested
// synchronously instead, behind the operator's back.
func (h *Handler) enqueue(in *inbound) *refusal {
	p := in.p
	qd := domain.QueuedDelivery{Delivery: in.d, TenantSlug: p.TenantSlug, ProviderName: p.Name, ProviderKind: p.Kind, Events: in.events,
		Identity: domain.DeliveryIdentity(p.TenantID, p.ID, in.body, in.events)}
	duplicate, err := h.queue.Enqueue(in.ctx, qd)
	if err != nil {
		if httpx.ErrorStatus(err) != http.StatusServiceUnavailable {
			return &refusal{err: err, kind: p.Kind}
		}
		h.log.WarnContext(in.ctx, "delivery queue unavailable", "tenant", p.TenantSlug, "provider", p.Name, "err", err)
		return &refusal{status: http.StatusServiceUnavailable, kind: p.Kind,
			msg: "the delivery queue is unavailable and nothing was stored; retry after the Retry-After delay"}
	}
	status := "queued"
	if duplicate {
		status = "duplicate" // a retry of a delivery the queue already holds: stored once
	}
	code := provider.RespondQueued(in.kind, in.w, in.d.ID, status)
	h.metrics.Delivery(p.Kind, code, time.Since(in.start).Seconds())
	return nil
}
