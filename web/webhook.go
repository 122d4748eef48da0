package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// A receiver understands the deliveries of one provider kind.
type receiver interface {
	// authenticate checks the delivery over its raw bytes before anything is
	// parsed, returning the signature verdict stored with the delivery.
	authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (verdict string, err error)
	// parse splits an authenticated body into events, in delivery order. An
	// error means the body is not in the kind's format at all (400).
	parse(r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error)
	// respond acknowledges a committed delivery.
	respond(w http.ResponseWriter, deliveryID string, results []domain.Result)
}

var receivers = map[string]receiver{
	domain.KindStandard:   standardReceiver{},
	domain.KindShippo:     shippoReceiver{},
	domain.KindSalesforce: salesforceReceiver{},
	domain.KindHubSpot:    hubspotReceiver{},
}

// publicBaseKey is the request context key under which handleWebhook
// stores the public base URL (string) the provider calls this server at, for
// receivers whose signature covers the URL.
type publicBaseKey struct{}

// ingestBudget bounds the database work of one delivery, well inside the
// 5-10 s providers wait, so an overloaded database answers 503 rather than
// letting the provider time out.
const ingestBudget = 3 * time.Second

// handleWebhook receives POST /webhooks/{tenant}/{provider}. Nothing is
// acknowledged that was not committed: every non-2xx answer leaves the
// provider to retry, and 200 is written only after Ingest committed.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	// Receivers that sign the URL (HubSpot) verify against the public URL the
	// provider called, which differs from r.Host behind a proxy.
	r = r.WithContext(context.WithValue(r.Context(), publicBaseKey{}, s.baseURL(r)))
	ctx, cancel := context.WithTimeout(r.Context(), ingestBudget)
	defer cancel()

	p, err := s.ingest.Endpoint(ctx, chi.URLParam(r, "tenant"), chi.URLParam(r, "provider"))
	if err != nil {
		s.metrics.delivery("unknown", errorStatus(err), time.Since(start).Seconds())
		s.fail(w, r, err)
		return
	}
	rcv, ok := receivers[p.Kind]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("provider kind %q is not supported by this version of Tidemark", p.Kind))
		return
	}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: start}
	reject := func(status int, verdict string, body []byte, msg string) {
		if verdict != domain.SignatureValid {
			body = nil // keep only what an authenticated sender sent
		}
		d.Status, d.Signature, d.Reason, d.Body = status, verdict, msg, body
		if err := s.ingest.LogDelivery(ctx, d); err != nil {
			s.log.Warn("could not log rejected delivery", "tenant", p.TenantSlug, "provider", p.Name, "err", err)
		}
		s.metrics.delivery(p.Kind, status, time.Since(start).Seconds())
		writeError(w, status, msg)
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reject(http.StatusRequestEntityTooLarge, domain.SignatureUnchecked, nil,
				fmt.Sprintf("body larger than %d bytes", s.maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	verdict, err := rcv.authenticate(r, body, p, start)
	if err != nil {
		reject(http.StatusUnauthorized, verdict, nil, err.Error())
		return
	}
	events, err := rcv.parse(r, body, p)
	if err != nil {
		reject(http.StatusBadRequest, verdict, body, err.Error())
		return
	}
	for i := range events {
		events[i].Seq = i
	}
	d.Status, d.Signature = http.StatusOK, verdict
	results, err := s.ingest.Ingest(ctx, d, p, events)
	if domain.ErrorCode(err) == domain.EINVALID {
		reject(http.StatusBadRequest, verdict, body, domain.ErrorMessage(err))
		return
	}
	if err != nil {
		s.metrics.delivery(p.Kind, errorStatus(err), time.Since(start).Seconds())
		s.fail(w, r, err)
		return
	}
	for _, res := range results {
		s.metrics.events.WithLabelValues(p.Kind, string(res.Outcome)).Inc()
	}
	s.metrics.delivery(p.Kind, http.StatusOK, time.Since(start).Seconds())
	rcv.respond(w, d.ID, results)
}
