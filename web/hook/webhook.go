package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
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
	in := h.arrive(w, r)
	defer in.done()
	if ref := h.deliver(in); ref != nil {
		h.refuse(in, ref)
	}
}

// deliver takes a delivery through its steps in order; the first that
// refuses it ends the walk with the refusal to answer.
func (h *Handler) deliver(in *inbound) *refusal {
	if ref := h.endpoint(in); ref != nil {
		return ref
	}
	if ref := h.readBody(in); ref != nil {
		return ref
	}
	if ref := h.authenticate(in); ref != nil {
		return ref
	}
	if ref := h.parse(in); ref != nil {
		return ref
	}
	if h.queue != nil {
		return h.enqueue(in) // queued.go: acknowledged once the queue stored it
	}
	if ref := h.commit(in); ref != nil {
		return ref
	}
	h.respond(in)
	return nil
}

// inbound is one delivery on its way through Receive's steps: each step
// fills in what the next ones read.
type inbound struct {
	w      http.ResponseWriter
	r      *http.Request
	start  time.Time    // the delivery's received_at (h.now)
	began  time.Time    // the real clock, for the budget (h.now may be a test's fixed clock)
	client netip.Prefix // the budgets' client address

	p    domain.ProviderEndpoint
	kind provider.Kind
	d    domain.Delivery

	body    []byte
	ctx     context.Context // what is left of the budget once the body is read
	cancel  context.CancelFunc
	verdict string
	events  []domain.Event
	results []domain.Result
}

// arrive starts a delivery. Kinds that sign the URL verify against the
// public URL the provider called, which differs from r.Host behind a
// proxy.
func (h *Handler) arrive(w http.ResponseWriter, r *http.Request) *inbound {
	in := &inbound{w: w, start: h.now(), client: httpx.ClientPrefix(r)}
	in.r = r.WithContext(provider.WithPublicBase(r.Context(), httpx.BaseURL(h.publicURL, r)))
	in.began = time.Now()
	return in
}

// done releases what is left of the delivery's budget.
func (in *inbound) done() {
	if in.cancel != nil {
		in.cancel()
	}
}

// endpoint finds the provider the URL names and its kind. From here on,
// the request's log lines and span name the delivery.
func (h *Handler) endpoint(in *inbound) *refusal {
	p, ref := h.lookup(in)
	if ref != nil {
		return ref
	}
	kind, ok := provider.Lookup(p.Kind)
	if !ok {
		return &refusal{status: http.StatusNotFound,
			msg: fmt.Sprintf("provider kind %q is not supported by this version of Tidemark", p.Kind)}
	}
	in.p, in.kind = p, kind
	in.d = domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: in.start,
		Request: captureRequest(in.r, p.Kind)}
	reqlog.SetTenant(in.r.Context(), p.TenantSlug)
	reqlog.SetDelivery(in.r.Context(), in.d.ID)
	tracing.NoteEndpoint(in.r.Context(), p.TenantSlug, p.Name, p.Kind, in.d.ID)
	return nil
}

// lookup reads the endpoint within the budgets. They are checked only once
// a request is refused: the endpoint comes from the in-memory cache, so
// authenticating first costs no database read, and a valid delivery is
// never answered 429 because of other requests' refusals.
func (h *Handler) lookup(in *inbound) (domain.ProviderEndpoint, *refusal) {
	tenant, name := chi.URLParam(in.r, "tenant"), chi.URLParam(in.r, "provider")
	var p domain.ProviderEndpoint
	var err error
	if over, wait := h.limits.addresses.Exhausted(addressKey{in.client, 0}, time.Now()); over {
		// Past its budget for unknown names, an address is served from the
		// endpoint cache only: its made-up names cost no query.
		var hit bool
		if c, ok := h.ingest.(cachedEndpoints); ok {
			p, hit, err = c.CachedEndpoint(tenant, name)
		}
		if !hit || err != nil {
			return p, tooMany("address", wait)
		}
	} else {
		ctx, cancel := context.WithTimeout(in.r.Context(), ingestBudget)
		defer cancel()
		release, ok := h.tenantGate.acquire(ctx, tenant)
		if !ok {
			h.metrics.TenantBusy()
			h.overloaded(tenant, domain.OverloadLookupGate)
			return p, tenantBusy()
		}
		p, err = h.ingest.Endpoint(ctx, tenant, name)
		release()
	}
	if err == nil {
		return p, nil
	}
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		// Guessing names is a refusal too, counted against the address.
		if over, wait := h.limits.refuse(in.client, 0, time.Now()); over != "" {
			return p, tooMany(over, wait)
		}
	}
	return p, &refusal{err: err, kind: "unknown"}
}

// readBody reads the body, up to the provider's limit. The budget's clock
// stops while it is read.
func (h *Handler) readBody(in *inbound) *refusal {
	spent := time.Since(in.began)
	limit := provider.MaxBody(in.p.Provider)
	body, err := io.ReadAll(http.MaxBytesReader(in.w, in.r.Body, limit))
	in.ctx, in.cancel = context.WithTimeout(in.r.Context(), ingestBudget-spent)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return in.refused(http.StatusRequestEntityTooLarge, domain.SignatureUnchecked, nil, fmt.Sprintf(
				"body larger than this provider's limit of %s (%d bytes); an operator can raise it with "+
					"tidemark provider update --tenant %s --provider %s --max-body SIZE (at most %s)",
				domain.FormatByteSize(limit), limit, in.p.TenantSlug, in.p.Name, domain.FormatByteSize(domain.MaxBodyCeiling)))
		}
		return &refusal{status: http.StatusBadRequest, msg: "could not read the request body"}
	}
	in.body = body
	return nil
}

// authenticate checks the delivery over its raw bytes, before anything is
// parsed.
func (h *Handler) authenticate(in *inbound) *refusal {
	err := tracing.Step(in.r.Context(), "authenticate", func(context.Context) error {
		verdict, err := in.kind.Authenticate(in.r, in.body, in.p, in.start)
		in.verdict = verdict
		if err != nil {
			return tracing.Classed(verdict, err)
		}
		return nil
	})
	if err != nil {
		return in.refused(http.StatusUnauthorized, in.verdict, nil, err.Error())
	}
	return nil
}

// parse splits the body into its events. Credentials the kind declares
// inside bodies are blanked first, before the body is parsed, stored or
// queued; a replay parses what was stored.
func (h *Handler) parse(in *inbound) *refusal {
	err := tracing.Step(in.r.Context(), "parse", func(ctx context.Context) error {
		in.body = provider.RedactBody(in.p.Kind, in.body)
		events, err := provider.Parse(in.kind, in.r, in.body, in.p)
		if err != nil {
			return tracing.Classed("unparsable", err)
		}
		in.events = events
		tracing.NoteEvents(ctx, len(events))
		return nil
	})
	if err != nil {
		return in.refused(http.StatusBadRequest, in.verdict, in.body, err.Error())
	}
	in.d.Status, in.d.Signature, in.d.Body = http.StatusOK, in.verdict, in.body
	return nil
}

// commit writes the delivery and decides its events' outcomes. Writes need
// no share of the pool: each tenant's deliveries are written by its own
// group committer, on one connection (postgres/ingest/committer.go).
func (h *Handler) commit(in *inbound) *refusal {
	results, err := h.ingest.Ingest(in.ctx, in.d, in.p, in.events)
	if domain.ErrorCode(err) == domain.EINVALID {
		return in.refused(http.StatusBadRequest, in.verdict, in.body, domain.ErrorMessage(err))
	}
	if err != nil {
		h.overloaded(in.p.TenantSlug, domain.OverloadReason(err))
		return &refusal{err: err, kind: in.p.Kind}
	}
	in.results = results
	return nil
}

// respond acknowledges a committed delivery the way its provider expects.
func (h *Handler) respond(in *inbound) {
	h.metrics.Events(in.p.Kind, in.results)
	h.metrics.Delivery(in.p.Kind, http.StatusOK, time.Since(in.start).Seconds())
	tracing.NoteOutcomes(trace.SpanFromContext(in.r.Context()), in.results)
	in.kind.Respond(in.w, in.d.ID, in.results)
}

// captureRequest is what the delivery log keeps of a delivery's request,
// with the credentials that its provider's kind, or the generic rule,
// names redacted.
func captureRequest(r *http.Request, kind string) domain.Request {
	return domain.CaptureRequest(r.Method, r.URL.Path, r.URL.RawQuery, r.Header, httpx.ClientAddress(r),
		func(name string) bool { return provider.CredentialHeader(kind, name) },
		func(name string) bool { return provider.CredentialQuery(kind, name) })
}

// overloaded counts a 503 for overload of tenant for reason ("" for none)
// on /metrics and, for the overview, in the tenant's counts per hour.
func (h *Handler) overloaded(tenant, reason string) {
	if reason != "" {
		h.metrics.Overloaded(reason)
		h.refusals.overload(tenant, reason, time.Now())
	}
}
