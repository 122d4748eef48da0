package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/web/httpx"
)

// changesPoll is how often a tenant's head is polled while any of its
// feed requests waits (headWatch): a change that commits on any node is
// answered within it and one read.
const changesPoll = 200 * time.Millisecond

// changesPerToken is how many feed requests a token may run at once on a
// node: a consumer needs one long poll per cursor.
const changesPerToken = 4

// handleChanges answers GET changes?after=&limit=&wait=&provider=&object_type=
// (docs/contract/changes.md). It takes a read slot for each read and the
// writing of its page, not for the whole wait, so that consumers holding
// long polls do not starve the tenant's other reads; while it waits, the
// tenant's headWatch polls for it.
func (h changeHandlers) handleChanges(w http.ResponseWriter, r *http.Request) {
	q, wait, err := changesQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	grant := tokenGrant(ctx)
	done, ok := h.calls.enter(grant.Tenant.ID, grant.ID)
	if !ok {
		httpx.WriteError(w, http.StatusTooManyRequests, fmt.Sprintf("at most %d change feed requests may run at once per API token, "+
			"and this token has %[1]d running; retry after the Retry-After delay, or give each consumer a token of its own",
			changesPerToken))
		return
	}
	defer done()
	deadline := time.Now().Add(wait)
	seen, waited := q.After, false
	for !h.pageChanges(w, r, q, deadline, waited) {
		seen = h.heads.wait(ctx, grant.Tenant.ID, seen, deadline)
		if ctx.Err() != nil {
			return // the consumer went away
		}
		waited = true
	}
}

// pageChanges reads a page under a read slot and, when it holds changes
// or the wait is over, writes it before giving the slot back: a page kept
// for a slow consumer counts against the tenant's reads. It reports
// whether it answered. A request that has waited waits out a busy gate
// until its deadline: one commit wakes every long poll of the tenant at
// once.
func (h changeHandlers) pageChanges(w http.ResponseWriter, r *http.Request, q stream.ChangeQuery, deadline time.Time, waited bool) bool {
	ctx := r.Context()
	tenant, caller := readKeys(r)
	release, ok := h.reads.Acquire(ctx, tenant, caller)
	for !ok && waited && ctx.Err() == nil && time.Now().Before(deadline) {
		release, ok = h.reads.Acquire(ctx, tenant, caller)
	}
	if !ok {
		w.Header().Set("Retry-After", "1")
		readsBusy(w, r)
		return true
	}
	defer release()
	changes, err := h.store.Changes(ctx, tokenTenant(ctx).ID, q)
	if err != nil {
		h.fail(w, r, err)
		return true
	}
	if len(changes) == 0 && time.Now().Before(deadline) {
		return false
	}
	writeChanges(w, q.After, changes)
	return true
}

// callCounter caps the requests each token runs at once on this node.
type callCounter struct {
	limit int

	mu      sync.Mutex
	running map[[2]int64]int // by tenant and token id
}

func newCallCounter(limit int) *callCounter {
	return &callCounter{limit: limit, running: map[[2]int64]int{}}
}

// enter counts a request of the token, unless it runs limit already; done
// ends it.
func (c *callCounter) enter(tenantID, tokenID int64) (done func(), ok bool) {
	key := [2]int64{tenantID, tokenID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[key] >= c.limit {
		return nil, false
	}
	c.running[key]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running[key]--; c.running[key] == 0 {
			delete(c.running, key)
		}
	}, true
}

func writeChanges(w http.ResponseWriter, after int64, changes []stream.Change) {
	out := make([]changejson.Change, len(changes))
	next := after
	for i, c := range changes {
		out[i] = changejson.From(c)
		next = c.Position
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"changes": out, "next_cursor": stream.FormatCursor(next)})
}

// changesQuery reads the feed's parameters; each out of range is a 400
// that names it.
func changesQuery(r *http.Request) (stream.ChangeQuery, time.Duration, error) {
	v := r.URL.Query()
	q := stream.ChangeQuery{Limit: stream.DefaultChangeLimit,
		ChangeFilter: stream.ChangeFilter{Provider: v.Get("provider"), ObjectType: v.Get("object_type")}}
	var err error
	if q.After, err = stream.ParseCursor(v.Get("after")); err != nil {
		return q, 0, err
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > stream.MaxChangeLimit {
			return q, 0, domain.Errorf(domain.EINVALID, "limit must be an integer from 1 to %d, got %q", stream.MaxChangeLimit, s)
		}
		q.Limit = n
	}
	var wait time.Duration
	if s := v.Get("wait"); s != "" {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(secs) || secs < 0 || secs > stream.MaxChangeWait.Seconds() {
			return q, 0, domain.Errorf(domain.EINVALID, "wait must be a number of seconds from 0 to %d, got %q",
				int(stream.MaxChangeWait.Seconds()), s)
		}
		wait = time.Duration(secs * float64(time.Second))
	}
	return q, wait, nil
}
