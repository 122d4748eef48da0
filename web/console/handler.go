// Package console is the operators' web console: server-rendered pages
// (templ, htmx) behind sessions, cross-origin protection, the operator,
// the tenant from their membership and their role there. routes.go holds
// the whole route table.
package console

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/web/httpx"
)

// Services are the domain services the console calls.
type Services struct {
	Access         domain.AccessService
	Operators      domain.OperatorService
	Providers      domain.ProviderService
	Tokens         domain.TokenService
	Events         domain.EventService
	Stats          domain.StatsService
	Records        domain.RecordService
	Conflicts      domain.ConflictService
	People         domain.PeopleService
	Audit          domain.AuditService
	Reconciliation domain.ReconciliationService
	Deliveries     domain.DeliveryService
	Replays        domain.ReplayService
	Destinations   stream.DestinationService
	// Alerts serves the alerts page and the banner of firing alerts.
	Alerts alerting.Service
	// APICredentials are providers' API credentials, on their pages.
	APICredentials pull.CredentialStore
	// Backfills: the provider page's jobs, the overview's sweeps.
	Backfills pull.JobStore
}

// Config wires a Handler to its dependencies.
type Config struct {
	Services
	Replayer *replay.Replayer // replays one delivery by hand
	// Webhook is the receiver, through which test events are sent in-process.
	Webhook  http.Handler
	Sessions scs.Store // where console sessions live
	Logger   *slog.Logger
	Now      func() time.Time // nil means time.Now
	// PublicURL is the base URL providers call; empty means built from
	// each request. An https URL also makes the console send HSTS, and its
	// session cookie Secure even on a loopback address.
	PublicURL string
	// Queue, when set, is queued mode: the overview shows what waits there.
	Queue domain.DeliveryQueue
	// Reads bounds the tenant pages' reads per tenant and operator,
	// shared with the API; nil means a gate of its own.
	Reads *httpx.ReadGate
}

// Handler serves the console.
type Handler struct {
	access     domain.AccessService
	operators  domain.OperatorService
	providers  domain.ProviderService
	tokens     domain.TokenService
	events     domain.EventService
	stats      domain.StatsService
	records    domain.RecordService
	conflicts  domain.ConflictService
	people     domain.PeopleService
	audit      domain.AuditService
	reconcile  domain.ReconciliationService
	deliveries domain.DeliveryService
	replays    domain.ReplayService
	dests      stream.DestinationService
	alerts     alerting.Service
	apiCreds   pull.CredentialStore
	backfills  pull.JobStore
	replayer   *replay.Replayer
	webhook    http.Handler

	sessions    *scs.SessionManager
	log         *slog.Logger
	now         func() time.Time
	publicURL   string
	httpsPublic bool                 // the public URL is https
	queue       domain.DeliveryQueue // nil: synchronous mode
	signIns     *signInBudgets
	reads       *httpx.ReadGate
}

// New returns the console's Handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{access: cfg.Access, operators: cfg.Operators, providers: cfg.Providers, tokens: cfg.Tokens,
		events: cfg.Events, stats: cfg.Stats, records: cfg.Records, conflicts: cfg.Conflicts, people: cfg.People,
		audit: cfg.Audit, reconcile: cfg.Reconciliation, deliveries: cfg.Deliveries, replays: cfg.Replays,
		dests: cfg.Destinations, alerts: cfg.Alerts, apiCreds: cfg.APICredentials, backfills: cfg.Backfills, replayer: cfg.Replayer, webhook: cfg.Webhook, sessions: newSessions(cfg.Sessions), log: cfg.Logger, now: cfg.Now,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"), httpsPublic: strings.HasPrefix(cfg.PublicURL, "https://"),
		queue: cfg.Queue, signIns: newSignInBudgets(), reads: cfg.Reads}
	if h.reads == nil {
		h.reads = httpx.NewReadGate(0)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// The console's page families, each a small type over the Handler, which
// holds what they share: the services, the sessions, the layout.
type (
	eventPages    struct{ *Handler } // finding an event (the history is web/console/lists)
	recordPages   struct{ *Handler } // the directory, timelines and repairs
	conflictPages struct{ *Handler }
	tokenPages    struct{ *Handler }
	memberPages   struct{ *Handler }
	adminPages    struct{ *Handler } // operators and the reconciliation report
)
