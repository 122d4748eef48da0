// Package web serves Tidemark over HTTP. It mounts the three surfaces,
// each a package with its own handler and route table (hook: the webhook
// receiver; api: the JSON API; console: the operators' pages), the MCP
// server (mcp), whose tools call the JSON API, and serves health, metrics
// and static files itself. routes.go is the index of
// every URL; testdata/routes.txt lists them all.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/web/api"
	"github.com/tidemark/tidemark/web/console"
	"github.com/tidemark/tidemark/web/hook"
	"github.com/tidemark/tidemark/web/httpx"
)

// DefaultMaxBody is the largest delivery body read for a provider without a
// limit of its own whose kind declares no default (docs/contract/webhooks.md#body-limit).
const DefaultMaxBody = provider.DefaultMaxBody

// Store is what the surfaces read and change: each declares what it
// uses (api.Store, console.Store, hook.Store), and one store serves them
// all.
type Store interface {
	api.Store
	console.Store
	hook.Store
}

// Config wires a Server to its dependencies.
type Config struct {
	Store    Store
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
	// WriteTimeout stops each statement of a write a console or API
	// request starts; 0 means httpx.DefaultWriteTimeout.
	WriteTimeout time.Duration
	// ReadConns is the size of the console's and the API's read pool: their
	// reads leave a few of its connections to sessions and sign-ins. 0
	// means unknown: only the caps per tenant and caller apply.
	ReadConns int
	// RefusalLimits bound refused deliveries per client address and per
	// provider; zero fields take the defaults.
	RefusalLimits hook.RefusalLimits
	// RefusalFlush is how often RunRefusalFlusher writes refused
	// deliveries; 0 means hook.DefaultRefusalFlush.
	RefusalFlush time.Duration
	// Queue, when set, is queued mode (serve --queue): accepted deliveries
	// are stored in it for the workers instead of ingested, and the
	// overview shows what waits there.
	Queue domain.DeliveryQueue
}

// Server holds the surfaces and what they share.
type Server struct {
	hook     *hook.Handler
	api      *api.Handler
	console  *console.Handler
	replayer *replay.Replayer

	ping             func(context.Context) error
	log              *slog.Logger
	metrics          *httpx.Metrics
	trusted          []netip.Prefix
	metricsElsewhere bool
	writeTimeout     time.Duration // of the writes console and API requests start
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{ping: cfg.Ping, log: cfg.Logger, metrics: httpx.NewMetrics(cfg.Collectors...),
		trusted: cfg.TrustedProxies, metricsElsewhere: cfg.MetricsElsewhere, writeTimeout: cfg.WriteTimeout}
	if s.log == nil {
		s.log = slog.Default()
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	s.hook = hook.New(hook.Config{Ingest: cfg.Store, Queue: cfg.Queue, Metrics: s.metrics, Logger: s.log, Now: now,
		PublicURL: cfg.PublicURL, IngestConns: cfg.IngestConns, RefusalLimits: cfg.RefusalLimits,
		RefusalFlush: cfg.RefusalFlush})
	// Replays are counted on /metrics like the deliveries they re-run.
	s.replayer = replay.New(cfg.Store, cfg.Store, now, s.metrics.Events)
	// One gate for the console's and the API's reads: both use the read pool.
	reads := httpx.NewReadGate(cfg.ReadConns)
	s.api = api.New(cfg.Store, s.replayer, reads, cfg.PublicURL, s.log)
	s.console = console.New(console.Config{Store: cfg.Store, Replayer: s.replayer, Webhook: http.HandlerFunc(s.hook.Receive),
		Sessions: cfg.Sessions, Logger: s.log, Now: now, PublicURL: cfg.PublicURL, Queue: cfg.Queue, Reads: reads})
	return s
}

// MetricsHandler serves the Prometheus metrics, which Handler also serves
// on /metrics unless Config.MetricsElsewhere is set.
func (s *Server) MetricsHandler() http.Handler { return httpx.NoSniff(s.metrics.Handler()) }

// RunRefusalFlusher writes the webhook's refused deliveries every
// Config.RefusalFlush until ctx ends. After the HTTP server has shut
// down, FlushRefusals writes the rest.
func (s *Server) RunRefusalFlusher(ctx context.Context) { s.hook.RunRefusalFlusher(ctx) }

// FlushRefusals writes the refused deliveries not written yet, in one
// round trip.
func (s *Server) FlushRefusals(ctx context.Context) error { return s.hook.FlushRefusals(ctx) }

// Replayer replays stored deliveries, as the API and the console do, with
// the outcomes counted on this server's /metrics: serve runs a
// replay.Worker with it.
func (s *Server) Replayer() *replay.Replayer { return s.replayer }
