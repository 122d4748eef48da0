package hook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/httpx"
)

// The app endpoint, POST /webhooks/apps/{name} (docs/contract/apps.md):
// one URL for every portal that installed an app, signed with the app's
// client secret. Its batch is split by portal and each portal's events
// are ingested as a delivery of the provider the portal is installed for,
// through the ingest a provider URL uses; a portal installed for no
// tenant is counted, never applied.

// appCommits bounds how many tenants' deliveries of one batch commit at
// once.
const appCommits = 8

// appKind is the provider kind an app's deliveries are verified, parsed
// and counted as.
const appKind = domain.AppKindHubSpot

// ReceiveApp receives POST /webhooks/apps/{name}. It answers 200 only once
// every routed portal's events committed (or were queued) and the
// unrouted ones were counted.
func (h *Handler) ReceiveApp(w http.ResponseWriter, r *http.Request) {
	in := h.arrive(w, r)
	defer in.done()
	if ref := h.deliverApp(in); ref != nil {
		h.refuse(in, ref)
	}
}

// appInbound is an app's delivery on its way: the inbound's request,
// budget and body, and what routing it found.
type appInbound struct {
	*inbound
	store domain.AppRouting
	app   domain.App
}

// deliverApp takes an app's delivery through its steps; the first that
// refuses it ends the walk.
func (h *Handler) deliverApp(in *inbound) *refusal {
	store, ok := h.ingest.(domain.AppRouting)
	if !ok {
		return &refusal{status: http.StatusNotFound, kind: "unknown", msg: "this server routes no app's deliveries"}
	}
	a := &appInbound{inbound: in, store: store}
	for _, step := range []func(*appInbound) *refusal{h.appLookup, h.appReadBody, h.appAuthenticate, h.appParse} {
		if ref := step(a); ref != nil {
			return ref
		}
	}
	return h.route(a)
}

// appLookup finds the app the URL names. An unknown name is answered as
// an unknown provider URL is, and spends the address's budget for
// unknown names; past it, the address is served from the apps in memory
// only, so that its made-up names cost no query while HubSpot's valid
// deliveries for a known app still pass.
func (h *Handler) appLookup(a *appInbound) *refusal {
	name := chi.URLParam(a.r, "name")
	app, hit := h.apps.get(name, time.Now())
	var err error
	switch over, wait := h.limits.addresses.Exhausted(addressKey{a.client, 0}, time.Now()); {
	case hit:
	case over:
		return tooMany("address", wait)
	case domain.ValidateSlug("app", name) != nil:
		err = domain.Errorf(domain.ENOTFOUND, "app %q not found", name)
	default:
		ctx, cancel := context.WithTimeout(a.r.Context(), ingestBudget)
		app, err = a.store.App(ctx, name)
		cancel()
	}
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		if over, wait := h.limits.refuse(a.client, 0, time.Now()); over != "" {
			return tooMany(over, wait)
		}
		return &refusal{status: http.StatusNotFound, kind: "unknown", msg: fmt.Sprintf("no webhook endpoint at this URL: app %q not found", name)}
	}
	if err != nil {
		return &refusal{err: err, kind: "unknown"}
	}
	h.apps.put(app, time.Now())
	a.app = app
	return nil
}

// appCacheTTL is how long an app read is reused: a deleted app's URL
// answers 404 within it (its secrets are read for every delivery).
const appCacheTTL = 30 * time.Second

// appCache holds the apps found recently, by name; only apps that exist
// enter it, so its size is bounded by theirs. Its zero value is ready.
type appCache struct {
	mu   sync.Mutex
	apps map[string]cachedApp
}

type cachedApp struct {
	app domain.App
	at  time.Time
}

func (c *appCache) get(name string, now time.Time) (domain.App, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.apps[name]
	if !ok || now.Sub(e.at) > appCacheTTL {
		return domain.App{}, false
	}
	return e.app, true
}

func (c *appCache) put(app domain.App, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apps == nil {
		c.apps = map[string]cachedApp{}
	}
	if e, ok := c.apps[app.Name]; !ok || now.Sub(e.at) > appCacheTTL {
		c.apps[app.Name] = cachedApp{app: app, at: now}
	}
}

// appReadBody reads the body up to the HubSpot kind's limit; the budget's
// clock stops while it is read.
func (h *Handler) appReadBody(a *appInbound) *refusal {
	spent := time.Since(a.began)
	limit := provider.KindMaxBody(appKind)
	body, err := io.ReadAll(http.MaxBytesReader(a.w, a.r.Body, limit))
	a.ctx, a.cancel = context.WithTimeout(a.r.Context(), ingestBudget-spent)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &refusal{status: http.StatusRequestEntityTooLarge, kind: appKind,
			msg: fmt.Sprintf("body larger than an app's limit of %s (%d bytes)", domain.FormatByteSize(limit), limit)}
	case err != nil:
		return &refusal{status: http.StatusBadRequest, kind: appKind, msg: "could not read the request body"}
	}
	a.body = body
	return nil
}

// appAuthenticate verifies HubSpot's v3 signature over the app's webhook
// URL with the app's client secrets (the current one, then the one
// rotated out during its overlap), as the HubSpot kind verifies a
// provider's: constant-time, within the timestamp window. A refusal is
// counted on /metrics and against the address's refusal budget; nothing
// is written.
func (h *Handler) appAuthenticate(a *appInbound) *refusal {
	secrets, err := a.store.AppSecrets(a.ctx, a.app.ID)
	if err != nil {
		return &refusal{err: err, kind: appKind}
	}
	a.p = appEndpoint(secrets)
	a.kind = provider.HubSpot
	a.verdict, err = provider.HubSpot.Authenticate(a.r, a.body, a.p, a.start)
	if err == nil {
		return nil
	}
	h.log.InfoContext(a.r.Context(), "app delivery refused", "app", a.app.Name, "signature", a.verdict, "reason", err.Error())
	if over, wait := h.limits.refuse(a.client, 0, time.Now()); over != "" {
		return tooMany(over, wait)
	}
	return &refusal{status: http.StatusUnauthorized, kind: appKind, msg: err.Error()}
}

// appEndpoint is what the HubSpot kind verifies and parses an app's
// delivery with: the app's secrets, v3 signatures only.
func appEndpoint(secrets []string) domain.ProviderEndpoint {
	return domain.ProviderEndpoint{Provider: domain.Provider{Kind: appKind, Config: map[string]string{"allow_v1": "false"}},
		Secrets: secrets}
}

// appParse splits the batch into its events, as a provider URL's.
func (h *Handler) appParse(a *appInbound) *refusal {
	a.body = provider.RedactBody(appKind, a.body)
	events, err := provider.Parse(a.kind, a.r, a.body, a.p)
	if err != nil {
		return &refusal{status: http.StatusBadRequest, kind: appKind, msg: err.Error()}
	}
	a.events = events
	return nil
}

// portalBatch is one portal's share of an app's batch.
type portalBatch struct {
	portal  int64
	events  []domain.Event // numbered from 0 within the portal's delivery
	install domain.AppInstall

	deliveryID string
	results    []domain.Result
	err        error
	gone       bool // its provider went away since it was routed: unrouted
}

// body is the portal's events as a batch of their own, which its
// delivery keeps: a replay parses it into the same events.
func (b *portalBatch) body() []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, e := range b.events {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(e.Payload)
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// splitByPortal groups events by their portalId, in order of first
// appearance; an event without a usable one falls under portal 0, which
// no install has.
func splitByPortal(events []domain.Event) []*portalBatch {
	var out []*portalBatch
	byPortal := map[int64]*portalBatch{}
	for _, e := range events {
		id := portalOf(e.Payload)
		b := byPortal[id]
		if b == nil {
			b = &portalBatch{portal: id}
			byPortal[id] = b
			out = append(out, b)
		}
		e.Seq = len(b.events)
		b.events = append(b.events, e)
	}
	return out
}

// portalOf reads an event's portalId as the HubSpot kind reads its
// identifiers (a number, or a string of digits); 0 when it has none.
func portalOf(payload []byte) int64 {
	var f struct {
		PortalID json.RawMessage `json:"portalId"`
	}
	if json.Unmarshal(payload, &f) != nil {
		return 0
	}
	raw := string(bytes.Trim(bytes.TrimSpace(f.PortalID), `"`))
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n <= 0 || raw[0] == '+' {
		return 0
	}
	return n
}

// route resolves the batch's portals to their installs at once, commits
// each routed portal's events to its tenant's provider concurrently,
// counts the rest, then takes the batch's uninstalls (app_lifecycle.go).
func (h *Handler) route(a *appInbound) *refusal {
	events, lifecycle := takeLifecycle(a.events, a.start)
	batches := splitByPortal(events)
	portals := make([]int64, 0, len(batches))
	for _, b := range batches {
		if b.portal > 0 {
			portals = append(portals, b.portal)
		}
	}
	routes, err := a.store.PortalRoutes(a.ctx, a.app.ID, portals)
	if err != nil {
		return &refusal{err: err, kind: appKind}
	}
	var routed []*portalBatch
	for _, b := range batches {
		if in, ok := routes[b.portal]; ok {
			b.install = in
			routed = append(routed, b)
		}
	}
	h.commitPortals(a, routed)
	if ref := h.routeFailed(a, routed); ref != nil {
		return ref
	}
	unrouted := h.unrouted(batches, routes)
	if err := a.store.CountUnrouted(a.ctx, a.app.ID, a.start, unrouted); err != nil {
		return &refusal{err: err, kind: appKind}
	}
	uninstalled, ref := h.uninstall(a, lifecycle)
	if ref != nil {
		return ref
	}
	h.respondApp(a, routed, unrouted, uninstalled)
	return nil
}

// commitPortals writes each routed portal's events, at most appCommits
// tenants at once.
func (h *Handler) commitPortals(a *appInbound, routed []*portalBatch) {
	slots := make(chan struct{}, appCommits)
	done := make(chan struct{})
	for _, b := range routed {
		go func() {
			slots <- struct{}{}
			h.commitPortal(a, b)
			<-slots
			done <- struct{}{}
		}()
	}
	for range routed {
		<-done
	}
}

// commitPortal writes one portal's events as a delivery of its tenant's
// provider, through the ingest (or the queue) of a provider URL.
func (h *Handler) commitPortal(a *appInbound, b *portalBatch) {
	in := b.install
	release, ok := h.tenantGate.acquire(a.ctx, in.TenantSlug)
	if !ok {
		h.metrics.TenantBusy()
		h.overloaded(in.TenantSlug, domain.OverloadLookupGate)
		b.err = domain.Errorf(domain.EUNAVAILABLE, "too many deliveries of a tenant are being processed; retry after the Retry-After delay")
		return
	}
	p, err := h.ingest.Endpoint(a.ctx, in.TenantSlug, in.ProviderName)
	release()
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		b.gone = true
		return
	}
	if err != nil {
		b.err = err
		return
	}
	body := b.body()
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: a.start,
		Status: http.StatusOK, Signature: a.verdict, Body: body, Request: captureRequest(a.r, appKind)}
	b.deliveryID = d.ID
	if h.queue != nil {
		qd := domain.QueuedDelivery{Delivery: d, TenantSlug: p.TenantSlug, ProviderName: p.Name, ProviderKind: p.Kind, Events: b.events,
			Identity: domain.DeliveryIdentity(p.TenantID, p.ID, body, b.events)}
		_, b.err = h.queue.Enqueue(a.ctx, qd)
	} else {
		b.results, b.err = h.ingest.Ingest(a.ctx, d, p, b.events)
	}
	if b.err != nil {
		h.overloaded(p.TenantSlug, domain.OverloadReason(b.err))
		return
	}
	h.metrics.Events(p.Kind, b.results)
	h.log.InfoContext(a.r.Context(), "app delivery routed", "app", a.app.Name, "portal", b.portal,
		"tenant", p.TenantSlug, "provider", p.Name, "delivery", d.ID, "events", len(b.events))
}

// routeFailed is the answer when a tenant's delivery did not commit: 503
// when any tenant refused for overload (HubSpot retries the batch; what
// committed is then duplicate), else the first failure's. Nothing is
// counted as unrouted then: the retry counts it.
func (h *Handler) routeFailed(a *appInbound, routed []*portalBatch) *refusal {
	var first error
	for _, b := range routed {
		switch {
		case b.err == nil:
		case httpx.ErrorStatus(b.err) == http.StatusServiceUnavailable:
			return &refusal{err: b.err, kind: appKind}
		case domain.ErrorCode(b.err) == domain.EINVALID:
			return &refusal{status: http.StatusBadRequest, kind: appKind, msg: domain.ErrorMessage(b.err)}
		case first == nil:
			first = b.err
		}
	}
	if first != nil {
		return &refusal{err: first, kind: appKind}
	}
	return nil
}

// maxUnroutedSample bounds the sample kept of a portal's unrouted events.
const maxUnroutedSample = 64 << 10

// unrouted are the batch's portals that no install routes (or whose
// provider is gone), with their counts and samples.
func (h *Handler) unrouted(batches []*portalBatch, routes map[int64]domain.AppInstall) []domain.UnroutedPortal {
	var out []domain.UnroutedPortal
	for _, b := range batches {
		if _, ok := routes[b.portal]; ok && !b.gone {
			continue
		}
		sample := b.body()
		if len(sample) > maxUnroutedSample {
			sample = []byte(`[]`) // counted; too large to keep
		}
		out = append(out, domain.UnroutedPortal{PortalID: b.portal, N: int64(len(b.events)), Sample: sample})
	}
	slices.SortFunc(out, func(x, y domain.UnroutedPortal) int { return cmp.Compare(x.PortalID, y.PortalID) })
	return out
}

// appAnswer is the 200 of an app's delivery: the deliveries it made, one
// per routed portal, how many events no install routes, and how many
// portals its uninstalls removed.
type appAnswer struct {
	Deliveries  []string `json:"deliveries"`
	Routed      int      `json:"routed"`
	Unrouted    int64    `json:"unrouted"`
	Uninstalled int      `json:"uninstalled"`
}

func (h *Handler) respondApp(a *appInbound, routed []*portalBatch, unrouted []domain.UnroutedPortal, uninstalled int) {
	answer := appAnswer{Deliveries: []string{}, Uninstalled: uninstalled}
	for _, b := range routed {
		if !b.gone {
			answer.Deliveries = append(answer.Deliveries, b.deliveryID)
			answer.Routed += len(b.events)
		}
	}
	for _, u := range unrouted {
		answer.Unrouted += u.N
	}
	h.metrics.Delivery(appKind, http.StatusOK, time.Since(a.start).Seconds())
	httpx.WriteJSON(a.w, http.StatusOK, answer)
}
