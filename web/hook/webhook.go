package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/overload"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/internal/reqlog"
	"github.com/tidemark/tidemark/internal/tracing"
	"github.com/tidemark/tidemark/web/httpx"
)

// ingestBudget bounds the database work of one delivery, well inside the
// 5-10 s providers wait, so an overloaded database answers 503 rather than
// letting the provider time out. The clock stops while the body is read: a
// slow upload is bounded by the server's read timeout, not by this.
const ingestBudget = 3 * time.Second

// Receive receives POST /webhooks/{tenant}/{provider}, the two read from
// chi's route context (the console's test events call it directly). Nothing is
// acknowledged that was not committed: every non-2xx answer leaves the
// provider to retry, and 200 is written only after Ingest committed.
func (h *Handler) Receive(w http.ResponseWriter, r *http.Request) {
	start := h.now()
	// Budgets are checked only once a request is refused: the endpoint
	// comes from the in-memory cache, so authenticating first costs no
	// database read, and a valid delivery is never answered 429 because of
	// other requests' refusals.
	client := httpx.ClientPrefix(r)
	// Kinds that sign the URL verify against the public URL the provider
	// called, which differs from r.Host behind a proxy.
	r = r.WithContext(provider.WithPublicBase(r.Context(), httpx.BaseURL(h.publicURL, r)))
	began := time.Now() // h.now may be a test's fixed clock; the budget needs a real one
	lookup, cancelLookup := context.WithTimeout(r.Context(), ingestBudget)
	defer cancelLookup()

	tenant, name := chi.URLParam(r, "tenant"), chi.URLParam(r, "provider")
	var p domain.ProviderEndpoint
	var err error
	if over, wait := h.limits.addresses.Exhausted(addressKey{client, 0}, time.Now()); over {
		// Past its budget for unknown names, an address is served from the
		// endpoint cache only: its made-up names cost no query.
		var hit bool
		if c, ok := h.ingest.(cachedEndpoints); ok {
			p, hit, err = c.CachedEndpoint(tenant, name)
		}
		if !hit || err != nil {
			h.tooMany(w, "unknown", "address", wait, start)
			return
		}
	} else {
		release, ok := h.tenantGate.acquire(lookup, tenant)
		if !ok {
			h.tenantBusy(w, tenant, start)
			return
		}
		p, err = h.ingest.Endpoint(lookup, tenant, name)
		release()
	}
	if err != nil {
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			// Guessing names is a refusal too, counted against the address.
			if over, wait := h.limits.refuse(client, 0, time.Now()); over != "" {
				h.tooMany(w, "unknown", over, wait, start)
				return
			}
		}
		h.metrics.Delivery("unknown", httpx.ErrorStatus(err), time.Since(start).Seconds())
		h.fail(w, r, err)
		return
	}
	kind, ok := provider.Lookup(p.Kind)
	if !ok {
		httpx.WriteError(w, http.StatusNotFound, fmt.Sprintf("provider kind %q is not supported by this version of Tidemark", p.Kind))
		return
	}
	var ctx context.Context // what is left of the budget once the body is read
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: start,
		Request: captureRequest(r, p.Kind)}
	// From here on, the request's log lines and span name the delivery.
	reqlog.SetTenant(r.Context(), p.TenantSlug)
	reqlog.SetDelivery(r.Context(), d.ID)
	tracing.NoteEndpoint(r.Context(), p.TenantSlug, p.Name, p.Kind, d.ID)
	// reject answers a refusal. It costs no database write: the refusal is
	// counted in memory and written with others (refusals.go), and past the
	// address's or provider's budget the answer is 429.
	reject := func(status int, verdict string, body []byte, msg string) {
		if verdict != domain.SignatureValid {
			body = nil // keep only what an authenticated sender sent
		}
		d.Status, d.Signature, d.Reason, d.Body = status, verdict, msg, body
		if over, wait := h.limits.refuse(client, p.ID, time.Now()); over != "" {
			d.Status, msg = http.StatusTooManyRequests, tooManyMessage(over)
			w.Header().Set("Retry-After", httpx.RetryAfter(wait))
			h.metrics.Limited(over)
		}
		h.refusals.add(d)
		h.metrics.Delivery(p.Kind, d.Status, time.Since(start).Seconds())
		httpx.WriteError(w, d.Status, msg)
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
		httpx.WriteError(w, http.StatusBadRequest, "could not read the request body")
		return
	}
	_, span := tracing.Start(r.Context(), "authenticate")
	verdict, err := kind.Authenticate(r, body, p, start)
	if err != nil {
		tracing.Fail(span, verdict)
		span.End()
		reject(http.StatusUnauthorized, verdict, nil, err.Error())
		return
	}
	span.End()
	// Credentials the kind declares inside bodies are blanked before the
	// body is parsed, stored or queued; a replay parses what was stored.
	_, span = tracing.Start(r.Context(), "parse")
	body = provider.RedactBody(p.Kind, body)
	events, err := replay.Parse(kind, r, body, p)
	if err != nil {
		tracing.Fail(span, "unparsable")
		span.End()
		reject(http.StatusBadRequest, verdict, body, err.Error())
		return
	}
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrEvents.Int(len(events)))
	}
	span.End()
	d.Status, d.Signature, d.Body = http.StatusOK, verdict, body
	if h.queue != nil {
		h.enqueue(ctx, w, r, d, p, kind, body, events, start)
		return
	}
	// Writes need no share of the pool: each tenant's deliveries are written
	// by its own group committer, on one connection (postgres/group.go).
	results, err := h.ingest.Ingest(ctx, d, p, events)
	if domain.ErrorCode(err) == domain.EINVALID {
		reject(http.StatusBadRequest, verdict, body, domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.overloaded(p.TenantSlug, overload.ReasonOf(err))
		h.metrics.Delivery(p.Kind, httpx.ErrorStatus(err), time.Since(start).Seconds())
		h.fail(w, r, err)
		return
	}
	h.metrics.Events(p.Kind, results)
	h.metrics.Delivery(p.Kind, http.StatusOK, time.Since(start).Seconds())
	tracing.NoteOutcomes(trace.SpanFromContext(r.Context()), results)
	kind.Respond(w, d.ID, results)
}

// cachedEndpoints is an IngestService whose endpoints can be read from
// memory alone (postgres/ingest's endpoint cache).
type cachedEndpoints interface {
	CachedEndpoint(tenantSlug, providerName string) (p domain.ProviderEndpoint, hit bool, err error)
}

// captureRequest is what the delivery log keeps of a delivery's request,
// with the credentials that its provider's kind, or the generic rule,
// names redacted.
func captureRequest(r *http.Request, kind string) domain.Request {
	return domain.CaptureRequest(r.Method, r.URL.Path, r.URL.RawQuery, r.Header, httpx.ClientAddress(r),
		func(name string) bool { return provider.CredentialHeader(kind, name) },
		func(name string) bool { return provider.CredentialQuery(kind, name) })
}

// tooMany answers 429 for a client or provider past its refusal budget.
func (h *Handler) tooMany(w http.ResponseWriter, kind, over string, wait time.Duration, start time.Time) {
	h.metrics.Limited(over)
	h.metrics.Delivery(kind, http.StatusTooManyRequests, time.Since(start).Seconds())
	w.Header().Set("Retry-After", httpx.RetryAfter(wait))
	httpx.WriteError(w, http.StatusTooManyRequests, tooManyMessage(over))
}

func tooManyMessage(over string) string {
	if over == "provider" {
		return "too many refused deliveries for this provider; retry after the Retry-After delay with a valid signature"
	}
	return "too many refused deliveries from this address; retry after the Retry-After delay with a valid signature"
}

// tenantBusy answers 503 when the tenant already holds its share of the
// ingest pool: the other tenants keep theirs.
func (h *Handler) tenantBusy(w http.ResponseWriter, tenant string, start time.Time) {
	h.metrics.TenantBusy()
	h.overloaded(tenant, overload.LookupGate)
	h.metrics.Delivery("unknown", http.StatusServiceUnavailable, time.Since(start).Seconds())
	w.Header().Set("Retry-After", "1")
	httpx.WriteError(w, http.StatusServiceUnavailable, "too many deliveries of this tenant are being processed; retry after the Retry-After delay")
}

// overloaded counts a 503 for overload of tenant for reason ("" for none)
// on /metrics and, for the overview, in the tenant's counts per hour.
func (h *Handler) overloaded(tenant, reason string) {
	if reason != "" {
		h.metrics.Overloaded(reason)
		h.refusals.overload(tenant, reason, time.Now())
	}
}
