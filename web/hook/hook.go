// Package hook is the webhook receiver: POST /webhooks/{tenant}/{provider}.
// It sits outside session and CSRF middleware: it caps the body, verifies
// the signature over the raw bytes before parsing, and answers with the
// outcomes of one short transaction (or, queued, once the queue stored it).
package hook

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the receiver needs of storage: endpoints, the ingest
// itself and the refusal counts. A Store that also has cachedEndpoints
// serves a client past its refusal budget from memory.
type Store interface {
	domain.IngestService
}

// cachedEndpoints is a Store whose endpoints can be read from memory alone
// (postgres/ingest's endpoint cache).
type cachedEndpoints interface {
	CachedEndpoint(tenantSlug, providerName string) (p domain.ProviderEndpoint, hit bool, err error)
}

// Config wires a Handler to its dependencies.
type Config struct {
	Ingest  Store
	Queue   domain.DeliveryQueue // nil: synchronous mode
	Metrics *httpx.Metrics
	Logger  *slog.Logger
	Now     func() time.Time // nil means time.Now
	// PublicURL is the base URL providers call; empty means built from
	// each request.
	PublicURL string
	// IngestConns is the size of the ingest connection pool: one tenant's
	// endpoint lookups that miss the cache hold at most half of it at once.
	// 0 means no cap.
	IngestConns int
	// RefusalLimits bound refused deliveries per client address and per
	// provider; zero fields take the defaults.
	RefusalLimits RefusalLimits
	// RefusalFlush is how often RunRefusalFlusher writes refused
	// deliveries; 0 means DefaultRefusalFlush.
	RefusalFlush time.Duration
}

// Handler receives webhook deliveries.
type Handler struct {
	ingest    Store
	queue     domain.DeliveryQueue
	metrics   *httpx.Metrics
	log       *slog.Logger
	now       func() time.Time
	publicURL string

	refusals     *refusalLog
	refusalFlush time.Duration
	limits       *refusalLimiter
	tenantGate   *tenantGate
	apps         appCache // the app endpoint's apps (app.go)
}

// New returns a Handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{ingest: cfg.Ingest, queue: cfg.Queue, metrics: cfg.Metrics, log: cfg.Logger, now: cfg.Now,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"), refusalFlush: cfg.RefusalFlush}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.metrics == nil {
		h.metrics = httpx.NewMetrics()
	}
	if h.refusalFlush <= 0 {
		h.refusalFlush = DefaultRefusalFlush
	}
	h.refusals = newRefusalLog(cfg.Ingest, h.log)
	h.limits, h.tenantGate = newRefusalLimiter(cfg.RefusalLimits), newTenantGate(cfg.IngestConns)
	return h
}

// Routes registers the receiver. Webhooks authenticate by signature, not
// by session or token.
func (h *Handler) Routes(r chi.Router) {
	r.Post("/webhooks/{tenant}/{provider}", h.Receive)
	// A static segment wins over a parameter in chi, and "apps" is no
	// tenant's name (domain.ValidateSlug): the app endpoint (app.go).
	r.Post("/webhooks/apps/{name}", h.ReceiveApp)
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpx.Fail(h.log, w, r, err)
}

// RunRefusalFlusher writes refused deliveries every Config.RefusalFlush
// until ctx ends. After the HTTP server has shut down, FlushRefusals
// writes the rest.
func (h *Handler) RunRefusalFlusher(ctx context.Context) { h.refusals.run(ctx, h.refusalFlush) }

// FlushRefusals writes the refused deliveries not written yet, in one
// round trip.
func (h *Handler) FlushRefusals(ctx context.Context) error { return h.refusals.flush(ctx) }
