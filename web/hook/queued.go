package hook

import (
	"context"
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
func (h *Handler) enqueue(ctx context.Context, w http.ResponseWriter, r *http.Request, d domain.Delivery, p domain.ProviderEndpoint,
	kind provider.Kind, body []byte, events []domain.Event, start time.Time) {
	qd := domain.QueuedDelivery{Delivery: d, TenantSlug: p.TenantSlug, ProviderName: p.Name, ProviderKind: p.Kind, Events: events,
		Identity: domain.DeliveryIdentity(p.TenantID, p.ID, body, events)}
	duplicate, err := h.queue.Enqueue(ctx, qd)
	if err != nil {
		h.metrics.Delivery(p.Kind, httpx.ErrorStatus(err), time.Since(start).Seconds())
		if httpx.ErrorStatus(err) != http.StatusServiceUnavailable {
			h.fail(w, r, err)
			return
		}
		h.log.WarnContext(ctx, "delivery queue unavailable", "tenant", p.TenantSlug, "provider", p.Name, "err", err)
		httpx.WriteError(w, http.StatusServiceUnavailable, "the delivery queue is unavailable and nothing was stored; retry after the Retry-After delay")
		return
	}
	status := "queued"
	if duplicate {
		status = "duplicate" // a retry of a delivery the queue already holds: stored once
	}
	code := provider.RespondQueued(kind, w, d.ID, status)
	h.metrics.Delivery(p.Kind, code, time.Since(start).Seconds())
}
