// Package console is the operators' web console: server-rendered pages
// (templ, htmx) behind sessions, cross-origin protection, the operator,
// the tenant from their membership and their role there. routes.go holds
// the whole route table.
package console

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/internal/sso"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/admin"
	"github.com/tidemark/tidemark/web/console/apps"
	"github.com/tidemark/tidemark/web/console/conflicts"
	"github.com/tidemark/tidemark/web/console/deliveries"
	"github.com/tidemark/tidemark/web/console/destinations"
	"github.com/tidemark/tidemark/web/console/lists"
	"github.com/tidemark/tidemark/web/console/overview"
	"github.com/tidemark/tidemark/web/console/people"
	"github.com/tidemark/tidemark/web/console/providers"
	"github.com/tidemark/tidemark/web/console/records"
	"github.com/tidemark/tidemark/web/console/workspace"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the console reads and changes: what the shell uses
// itself and what each page family declares it uses.
type Store interface {
	domain.AccessService   // sign-in, sessions, the workspaces menu
	domain.OperatorService // the signed-in operator
	identity.SSOService    // single sign-on
	alerting.Service       // the banner of firing alerts, web/console/alerts
	destinations.Store
	admin.Store
	workspace.Store
	records.Store
	conflicts.Store
	lists.Store
	people.Store
	providers.Store
	deliveries.Store
	overview.Store
	apps.Store
}

// Config wires a Handler to its dependencies.
type Config struct {
	Store    Store
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
	store    Store
	replayer *replay.Replayer
	webhook  http.Handler

	sessions    *scs.SessionManager
	log         *slog.Logger
	now         func() time.Time
	publicURL   string
	httpsPublic bool                 // the public URL is https
	queue       domain.DeliveryQueue // nil: synchronous mode
	signIns     *signInBudgets
	reads       *httpx.ReadGate
	rp          *sso.RP // single sign-on's relying party
	// lastLogin is the sign-in form's single sign-on as last read.
	lastLogin atomic.Pointer[views.LoginForm]
}

// New returns the console's Handler for cfg.
func New(cfg Config) *Handler {
	h := &Handler{store: cfg.Store, replayer: cfg.Replayer, webhook: cfg.Webhook, sessions: newSessions(cfg.Sessions),
		log: cfg.Logger, now: cfg.Now,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"), httpsPublic: strings.HasPrefix(cfg.PublicURL, "https://"),
		queue: cfg.Queue, signIns: newSignInBudgets(), reads: cfg.Reads}
	if h.reads == nil {
		h.reads = httpx.NewReadGate(0)
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.rp = sso.NewRP(h.now)
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}
