// Package api is the JSON API under /api/v1 (docs/contract/api.md).
// Every handler reads the tenant that requireToken put in the context and
// passes it to the domain service, which answers ENOTFOUND for anything
// outside it. routes.go holds the whole route table; the handlers live in
// small types, one per resource family, each holding what it uses.
package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the API reads and changes, one domain service per noun.
type Store interface {
	domain.TokenService // requireToken
	domain.RecordService
	domain.EventService
	domain.StatsService
	domain.ConflictService
	domain.PeopleService
	domain.AuditService
	domain.DeliveryService
	domain.ReplayService
	stream.ChangeFeed
	// Destinations are managed with read-write tokens only.
	stream.DestinationService
	// Alerts: rules read by any token, set by read-write ones.
	alerting.Service
	// Providers name the providers whose backfill jobs are started and read.
	domain.ProviderService
	pull.JobStore
	// The admin API, with admin tokens.
	AdminStore
}

// Handler serves the API: routes.go mounts its resource families.
type Handler struct {
	store     Store
	replayer  *replay.Replayer // replays one delivery by hand
	reads     *httpx.ReadGate  // bounds reads per tenant and token
	heads     *headWatch       // wakes the feed's long polls
	feedCalls *callCounter     // feed requests per token
	publicURL string           // the base of the apps' webhook URLs the admin API shows; "" to build it from each request
	log       *slog.Logger
}

// New returns the API's Handler.
// reads is shared with the console, so a tenant's console and API reads
// share its slots; nil means a gate of its own. publicURL is the base URL
// providers call, "" to build it from each request.
func New(store Store, replayer *replay.Replayer, reads *httpx.ReadGate, publicURL string, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	if reads == nil {
		reads = httpx.NewReadGate(0)
	}
	return &Handler{store: store, replayer: replayer, reads: reads, heads: newHeadWatch(store, changesPoll, log),
		feedCalls: newCallCounter(changesPerToken), publicURL: publicURL, log: log}
}

// resource is what every resource family holds: the store it serves and
// the log its failures go to.
type resource struct {
	store Store
	log   *slog.Logger
}

func (h resource) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpx.Fail(h.log, w, r, err)
}

// The API's resource families, each a small type holding what it uses;
// routes.go mounts them.
type (
	recordHandlers   struct{ resource } // records, contacts, revisions, repairs
	eventHandlers    struct{ resource } // the event log and the stats
	peopleHandlers   struct{ resource }
	conflictHandlers struct{ resource }
	auditHandlers    struct{ resource }
	deliveryHandlers struct {
		resource
		replayer *replay.Replayer // replays one delivery by hand
	}
	replayHandlers      struct{ resource } // replay jobs
	destinationHandlers struct{ resource }
	alertHandlers       struct{ resource }
	backfillHandlers    struct{ resource }
	changeHandlers      struct {
		resource
		reads *httpx.ReadGate // a slot per read, not per long poll
		heads *headWatch
		calls *callCounter
	}
)

// failer answers a request with an error, as every resource family does.
type failer interface {
	fail(w http.ResponseWriter, r *http.Request, err error)
}

// listPage reads the page of the request (?limit=, ?cursor=), fetches it
// and converts each item. On an error it has answered and returns false.
func listPage[T, J any](h failer, w http.ResponseWriter, r *http.Request,
	fetch func(context.Context, domain.Page) ([]T, string, error), conv func(T) J) ([]J, string, bool) {
	p, err := page(r)
	if err != nil {
		h.fail(w, r, err)
		return nil, "", false
	}
	items, next, err := fetch(r.Context(), p)
	if err != nil {
		h.fail(w, r, err)
		return nil, "", false
	}
	out := make([]J, len(items))
	for i, item := range items {
		out[i] = conv(item)
	}
	return out, next, true
}

// listJSON answers one page of a list: {key: [...], "next_cursor": ...},
// next_cursor null on the last page.
func listJSON[T, J any](h failer, w http.ResponseWriter, r *http.Request, key string,
	fetch func(context.Context, domain.Page) ([]T, string, error), conv func(T) J) {
	if out, next, ok := listPage(h, w, r, fetch, conv); ok {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{key: out, "next_cursor": nextCursor(next)})
	}
}
