package api

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/web/httpx"
)

// changesPoll is how often a waiting feed request looks at its tenant's
// head: a change that commits on any node is answered within it and one
// read.
const changesPoll = 200 * time.Millisecond

// handleChanges answers GET changes?after=&limit=&wait=&provider=&object_type=
// (docs/contract/changes.md). It takes a read slot for each read only, not
// for the whole wait, so that consumers holding long polls do not starve
// the tenant's other reads.
func (h *Handler) handleChanges(w http.ResponseWriter, r *http.Request) {
	q, wait, err := changesQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	tenantID := tokenTenant(ctx).ID
	deadline := time.Now().Add(wait)
	var head int64 = -1
	for {
		changes, busy, err := h.readChanges(r, tenantID, q)
		if busy {
			w.Header().Set("Retry-After", "1")
			readsBusy(w, r)
			return
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if len(changes) > 0 || !time.Now().Before(deadline) {
			writeChanges(w, q.After, changes)
			return
		}
		if head, err = h.awaitHead(ctx, tenantID, max(head, q.After), deadline); err != nil {
			if ctx.Err() != nil {
				return // the consumer went away
			}
			h.fail(w, r, err)
			return
		}
	}
}

// readChanges reads one page under a read slot; busy when none was free.
func (h *Handler) readChanges(r *http.Request, tenantID int64, q stream.ChangeQuery) ([]stream.Change, bool, error) {
	tenant, caller := readKeys(r)
	release, ok := h.reads.Acquire(r.Context(), tenant, caller)
	if !ok {
		return nil, true, nil
	}
	defer release()
	changes, err := h.changes.Changes(r.Context(), tenantID, q)
	return changes, false, err
}

// awaitHead polls the tenant's head until it passes seen or the deadline
// comes, and returns the head it saw last.
func (h *Handler) awaitHead(ctx context.Context, tenantID, seen int64, deadline time.Time) (int64, error) {
	tick := time.NewTicker(changesPoll)
	defer tick.Stop()
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return seen, nil
		}
		select {
		case <-ctx.Done():
			return seen, ctx.Err()
		case <-time.After(left):
			return seen, nil
		case <-tick.C:
		}
		head, err := h.changes.ChangeHead(ctx, tenantID)
		if err != nil {
			return seen, err
		}
		if head > seen {
			return head, nil
		}
	}
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
