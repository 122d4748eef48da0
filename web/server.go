// Package web serves Tidemark over HTTP: the webhook receivers, the JSON API,
// health and metrics. routes.go is the index of every URL.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// DefaultMaxBody is the largest delivery body read for a provider without a
// limit of its own whose kind declares no default (docs/contract.md section 1).
const DefaultMaxBody = provider.DefaultMaxBody

// Services are the domain services the handlers call, one per noun; the
// API, the console and the CLI use the same ones.
type Services struct {
	Ingest    domain.IngestService
	Access    domain.AccessService
	Operators domain.OperatorService
	Providers domain.ProviderService
	Tokens    domain.TokenService
	Events    domain.EventService
	Stats     domain.StatsService
	Records   domain.RecordService
	Conflicts domain.ConflictService
	People    domain.PeopleService
	Audit     domain.AuditService
	// Reconciliation serves the last reconciliation report (admin console).
	Reconciliation domain.ReconciliationService
	// Deliveries and Replays serve the delivery inspector and replays.
	Deliveries domain.DeliveryService
	Replays    domain.ReplayService
}

// Storage is one implementation of every service, as postgres.Store is.
type Storage interface {
	domain.IngestService
	domain.AccessService
	domain.OperatorService
	domain.ProviderService
	domain.TokenService
	domain.EventService
	domain.StatsService
	domain.RecordService
	domain.ConflictService
	domain.PeopleService
	domain.AuditService
	domain.ReconciliationService
	domain.DeliveryService
	domain.ReplayService
}

// ServicesOf returns every service from one storage.
func ServicesOf(st Storage) Services {
	return Services{Ingest: st, Access: st, Operators: st, Providers: st, Tokens: st, Events: st, Stats: st,
		Records: st, Conflicts: st, People: st, Audit: st, Reconciliation: st, Deliveries: st, Replays: st}
}

// Config wires a Server to its dependencies.
type Config struct {
	Services
	Sessions scs.Store                   // where console sessions live
	Ping     func(context.Context) error // database reachability, for /readyz
	Logger   *slog.Logger
	Now      func() time.Time // nil means time.Now
	// PublicURL is the base URL providers call; empty means built from each
	// request. An https URL also makes the console send HSTS, and its
	// session cookie Secure even on a loopback address.
	PublicURL string
	// MetricsElsewhere leaves /metrics out of Handler, for serve
	// --metrics-addr to serve MetricsHandler on a listener of its own.
	MetricsElsewhere bool
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// when they connect; empty means the peer is always the client.
	TrustedProxies []netip.Prefix
	// Collectors are other packages' metrics to serve on /metrics.
	Collectors []prometheus.Collector
	// IngestConns is the size of the ingest connection pool: one tenant's
	// endpoint lookups that miss the cache hold at most half of it at once.
	// 0 means no cap.
	IngestConns int
	// RefusalLimits bound refused deliveries per client address and per
	// provider; zero fields take the defaults.
	RefusalLimits RefusalLimits
	// RefusalFlush is how often Run writes refused deliveries; 0 means
	// DefaultRefusalFlush.
	RefusalFlush time.Duration
	// Queue, when set, is queued mode (serve --queue): accepted deliveries
	// are stored in it for the workers instead of ingested, and the
	// overview shows what waits there.
	Queue domain.DeliveryQueue
}

// Server holds the handlers' dependencies.
type Server struct {
	ingest    domain.IngestService
	access    domain.AccessService
	operators domain.OperatorService
	providers domain.ProviderService
	tokens    domain.TokenService
	events    domain.EventService
	stats     domain.StatsService
	records   domain.RecordService
	conflicts domain.ConflictService
	people    domain.PeopleService
	audit     domain.AuditService
	reconcile domain.ReconciliationService
	sessions  *scs.SessionManager
	ping      func(context.Context) error
	log       *slog.Logger
	now       func() time.Time
	metrics   *metrics
	publicURL string
	trusted   []netip.Prefix

	httpsPublic      bool // the public URL is https
	metricsElsewhere bool

	deliveries domain.DeliveryService // the inspector
	replays    domain.ReplayService

	refusals     *refusalLog
	refusalFlush time.Duration
	limits       *refusalLimiter
	tenantGate   *tenantGate
	queue        domain.DeliveryQueue // nil: synchronous mode
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{ingest: cfg.Ingest, access: cfg.Access, operators: cfg.Operators, providers: cfg.Providers,
		tokens: cfg.Tokens, events: cfg.Events, stats: cfg.Stats, records: cfg.Records, conflicts: cfg.Conflicts,
		people: cfg.People, audit: cfg.Audit, reconcile: cfg.Reconciliation, deliveries: cfg.Deliveries, replays: cfg.Replays,
		ping: cfg.Ping, log: cfg.Logger,
		now: cfg.Now, metrics: newMetrics(cfg.Collectors...), publicURL: strings.TrimRight(cfg.PublicURL, "/"), trusted: cfg.TrustedProxies,
		sessions: newSessions(cfg.Sessions), httpsPublic: strings.HasPrefix(cfg.PublicURL, "https://"),
		metricsElsewhere: cfg.MetricsElsewhere}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.refusals, s.refusalFlush = newRefusalLog(cfg.Ingest, s.log), cfg.RefusalFlush
	if s.refusalFlush <= 0 {
		s.refusalFlush = DefaultRefusalFlush
	}
	s.limits, s.tenantGate = newRefusalLimiter(cfg.RefusalLimits), newTenantGate(cfg.IngestConns)
	s.queue = cfg.Queue
	return s
}

// MetricsHandler serves the Prometheus metrics, which Handler also serves
// on /metrics unless Config.MetricsElsewhere is set.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// errorStatus maps a domain error code to an HTTP status.
func errorStatus(err error) int {
	switch domain.ErrorCode(err) {
	case domain.EINVALID:
		return http.StatusBadRequest
	case domain.ENOTFOUND:
		return http.StatusNotFound
	case domain.ECONFLICT:
		return http.StatusConflict
	case domain.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case domain.EFORBIDDEN:
		return http.StatusForbidden
	case domain.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers err as {"error": ...}. Internal errors are logged under a
// request id, not shown; an unavailable database asks the caller to retry,
// and a read stopped by the read timeout to narrow it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := errorStatus(err)
	msg := domain.ErrorMessage(err)
	switch {
	case status == http.StatusInternalServerError:
		s.internalError(w, r, err)
		return
	case errors.Is(err, domain.ErrReadTimeout):
		s.log.Warn("read stopped by the read timeout", "method", r.Method, "path", r.URL.Path, "err", err)
	case status == http.StatusServiceUnavailable:
		s.log.Warn("database unavailable", "path", r.URL.Path, "err", err)
		msg = "database unavailable, retry later"
	}
	writeError(w, status, msg)
}

// internalError answers 500 with {"error": "internal error", "request_id":
// ...}: the details stay in the log, under the same id.
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	id := s.logInternal(w, r, err)
	writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error", "request_id": id})
}

// logInternal logs err under a new request id, which it also sets as the
// answer's X-Request-Id header, and returns the id. Only the method and the
// path are logged with it: never a query (it can carry a URL token), a
// header or a body.
func (s *Server) logInternal(w http.ResponseWriter, r *http.Request, err error) string {
	id := uuid.Must(uuid.NewV7()).String()
	w.Header().Set("X-Request-Id", id)
	s.log.Error("internal error", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	return id
}

// recoverPanics answers a panicking handler like any internal error, with
// the stack in the log. http.ErrAbortHandler is left to net/http.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.internalError(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}()
		next.ServeHTTP(w, r)
	})
}

// baseURL is the URL providers and operators reach this server at.
func (s *Server) baseURL(r *http.Request) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return scheme + r.Host
}

// writeError answers {"error": msg}; internal errors go through fail or
// internalError instead, which add the request id. A 503 or 429 always
// tells when to retry: 5 s unless the caller set a Retry-After of its own.
func writeError(w http.ResponseWriter, status int, msg string) {
	if (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// pathParam is a URL parameter as sent, unescaped: chi routes on the
// escaped path when the request has one (an id holding "/" or "%"), and
// then hands its parameters out still escaped.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
