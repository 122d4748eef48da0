// Package api is the JSON API under /api/v1 (docs/contract/api.md).
// Every handler reads the tenant that requireToken put in the context and
// passes it to the domain service, which answers ENOTFOUND for anything
// outside it. routes.go holds the whole route table.
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

// Services are the domain services the API calls.
type Services struct {
	Tokens     domain.TokenService
	Records    domain.RecordService
	Events     domain.EventService
	Stats      domain.StatsService
	Conflicts  domain.ConflictService
	People     domain.PeopleService
	Audit      domain.AuditService
	Deliveries domain.DeliveryService
	Replays    domain.ReplayService
	Changes    stream.ChangeFeed
	// Destinations are managed with read-write tokens only.
	Destinations stream.DestinationService
	// Alerts: rules read by any token, set by read-write ones.
	Alerts alerting.Service
	// Providers name the providers whose backfill jobs are started and
	// read (Backfills).
	Providers domain.ProviderService
	Backfills pull.JobStore
}

// Handler serves the API.
type Handler struct {
	tokens       domain.TokenService
	records      domain.RecordService
	events       domain.EventService
	stats        domain.StatsService
	conflicts    domain.ConflictService
	people       domain.PeopleService
	audit        domain.AuditService
	deliveries   domain.DeliveryService
	changes      stream.ChangeFeed
	replays      domain.ReplayService
	destinations stream.DestinationService
	alerts       alerting.Service
	providers    domain.ProviderService
	backfills    pull.JobStore
	replayer     *replay.Replayer // replays one delivery by hand
	reads        *httpx.ReadGate  // bounds reads per tenant and token
	heads        *headWatch       // wakes the feed's long polls
	feedCalls    *callCounter     // feed requests per token
	log          *slog.Logger
}

// New returns the API's Handler.
// reads is shared with the console, so a tenant's console and API reads
// share its slots; nil means a gate of its own.
func New(s Services, replayer *replay.Replayer, reads *httpx.ReadGate, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	if reads == nil {
		reads = httpx.NewReadGate(0)
	}
	return &Handler{tokens: s.Tokens, records: s.Records, events: s.Events, stats: s.Stats, conflicts: s.Conflicts,
		people: s.People, audit: s.Audit, deliveries: s.Deliveries, replays: s.Replays, changes: s.Changes, destinations: s.Destinations, alerts: s.Alerts,
		providers: s.Providers, backfills: s.Backfills, replayer: replayer,
		reads: reads, heads: newHeadWatch(s.Changes, changesPoll, log), feedCalls: newCallCounter(changesPerToken),
		log: log}
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	httpx.Fail(h.log, w, r, err)
}

// listPage reads the page of the request (?limit=, ?cursor=), fetches it
// and converts each item. On an error it has answered and returns false.
func listPage[T, J any](h *Handler, w http.ResponseWriter, r *http.Request,
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
func listJSON[T, J any](h *Handler, w http.ResponseWriter, r *http.Request, key string,
	fetch func(context.Context, domain.Page) ([]T, string, error), conv func(T) J) {
	if out, next, ok := listPage(h, w, r, fetch, conv); ok {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{key: out, "next_cursor": nextCursor(next)})
	}
}
