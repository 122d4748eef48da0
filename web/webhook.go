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
	"github.com/tidemark/tidemark/web/provider"
)

// ingestBudget bounds the database work of one delivery, well inside the
// 5-10 s providers wait, so an overloaded database answers 503 rather than
// letting the provider time out. The clock stops while the body is read: a
// slow upload is bounded by the server's read timeout, not by this.
const ingestBudget = 3 * time.Second

// handleWebhook receives POST /webhooks/{tenant}/{provider}. Nothing is
// acknowledged that was not committed: every non-2xx answer leaves the
// provider to retry, and 200 is written only after Ingest committed.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	// Kinds that sign the URL verify against the public URL the provider
	// called, which differs from r.Host behind a proxy.
	r = r.WithContext(provider.WithPublicBase(r.Context(), s.baseURL(r)))
	began := time.Now() // s.now may be a test's fixed clock; the budget needs a real one
	lookup, cancelLookup := context.WithTimeout(r.Context(), ingestBudget)
	defer cancelLookup()

	p, err := s.ingest.Endpoint(lookup, chi.URLParam(r, "tenant"), chi.URLParam(r, "provider"))
	if err != nil {
		s.metrics.delivery("unknown", errorStatus(err), time.Since(start).Seconds())
		s.fail(w, r, err)
		return
	}
	kind, ok := provider.Lookup(p.Kind)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("provider kind %q is not supported by this version of Tidemark", p.Kind))
		return
	}
	var ctx context.Context // what is left of the budget once the body is read
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

	spent := time.Since(began)
	limit := provider.MaxBody(p.Provider)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	ctx, cancel := context.WithTimeout(r.Context(), ingestBudget-spent)
	defer cancel()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reject(http.StatusRequestEntityTooLarge, domain.SignatureUnchecked, nil, fmt.Sprintf(
				"body larger than this provider's limit of %s (%d bytes); an operator can raise it with "+
					"tidemark provider update --tenant %s --provider %s --max-body SIZE (at most %s)",
				domain.FormatByteSize(limit), limit, p.TenantSlug, p.Name, domain.FormatByteSize(domain.MaxBodyCeiling)))
			return
		}
		writeError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	verdict, err := kind.Authenticate(r, body, p, start)
	if err != nil {
		reject(http.StatusUnauthorized, verdict, nil, err.Error())
		return
	}
	events, err := kind.Parse(r, body, p)
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
	kind.Respond(w, d.ID, results)
}
