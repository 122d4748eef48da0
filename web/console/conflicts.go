package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// How much of the queue and of a timeline one page shows.
const (
	queueOpenLimit     = 100
	queueResolvedLimit = 50
	timelineLimit      = 200
)

// handleConflictQueue shows open conflicts, oldest first, then resolved
// ones. htmx polls it and gets the queue fragment alone, so a poll neither
// re-renders the page frame nor takes the pending flash.
func (h conflictPages) handleConflictQueue(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	query := r.URL.Query()
	open := domain.Page{Limit: queueOpenLimit, Cursor: query.Get("open_after"), Before: query.Get("open_before")}
	resolved := domain.Page{Limit: queueResolvedLimit, Cursor: query.Get("resolved_after"), Before: query.Get("resolved_before")}
	q, err := h.conflicts.ConflictQueue(ctx, t.ID, open, resolved)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	now := h.now()
	base := "/t/" + t.Slug + "/conflicts"
	p := views.ConflictQueuePage{OpenTotal: q.OpenTotal, PollURL: base + queryString(query),
		OpenPages: queuePages(base, query, "open", q.OpenPages, len(q.Open), q.OpenTotal, 0),
		ResolvedPages: queuePages(base, query, "resolved", q.ResolvedPages, len(q.Resolved), q.ResolvedTotal,
			domain.ConflictCountBound)}
	for _, c := range q.Open {
		p.Open = append(p.Open, views.QueuedConflict{Conflict: c, Age: waitedFor(now.Sub(c.DetectedAt))})
	}
	for _, c := range q.Resolved {
		p.Resolved = append(p.Resolved, views.QueuedConflict{Conflict: c})
	}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		page := views.ConflictQueueView(views.Layout{Tenant: t}, p)
		h.render(w, r, http.StatusOK, templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return templ.RenderFragments(ctx, w, page, "conflict-queue")
		}))
		return
	}
	if p.Search, err = h.contactSearch(r, "", ""); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.ConflictQueueView(h.layout(r, "Conflicts", "conflicts"), p))
}

// conflictIDParam reads the {id} of a conflict URL; a malformed id is a
// conflict that does not exist.
func conflictIDParam(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, domain.Errorf(domain.ENOTFOUND, "conflict %q not found", chi.URLParam(r, "id"))
	}
	return id, nil
}

func (h conflictPages) handleConflict(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := conflictIDParam(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	d, err := h.conflicts.ConflictDetail(ctx, currentTenant(ctx).ID, id)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	p := views.ConflictPage{ConflictDetail: d, Age: waitedFor(h.now().Sub(d.DetectedAt)),
		Diff: views.DiffFields(d.AcceptedSnapshot, d.ConflictingSnapshot)}
	if p.PrevOpen, p.NextOpen, err = h.conflicts.OpenNeighbours(ctx, currentTenant(ctx).ID, id); err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.ConflictView(h.layout(r, fmt.Sprintf("Conflict %d", id), "conflicts"), p))
}

// handleResolveConflict keeps or adopts, on behalf of the signed-in
// operator. A refusal (already resolved, record moved on, bad input) goes
// back to the conflict with the reason; success goes to the queue.
func (h conflictPages) handleResolveConflict(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := conflictIDParam(r)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	t := currentTenant(ctx)
	back := fmt.Sprintf("/t/%s/conflicts/%d", t.Slug, id)
	note := strings.TrimSpace(r.PostFormValue("note"))
	if utf8.RuneCountInString(note) > domain.MaxConflictNote {
		h.redirectWithFlash(w, r, back, "error",
			fmt.Sprintf("The note is too long: keep it under %d characters.", domain.MaxConflictNote))
		return
	}
	c, err := h.conflicts.ResolveConflict(ctx, t.ID, id, r.PostFormValue("resolution"), note, currentUser(ctx).Email)
	switch domain.ErrorCode(err) {
	case domain.ECONFLICT, domain.EINVALID:
		h.redirectWithFlash(w, r, back, "error", "Conflict "+strconv.FormatInt(id, 10)+" was not resolved: "+domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	msg := fmt.Sprintf("Conflict %d kept.", c.ID)
	if c.Status == domain.ConflictAdopted {
		msg = fmt.Sprintf("Conflict %d adopted: the record now holds the conflicting snapshot at revision %d.", c.ID, c.Revision)
	}
	h.redirectWithFlash(w, r, "/t/"+t.Slug+"/conflicts", "ok", msg)
}

// waitedFor is how long something has waited, coarsely: "< 1 min", "5 min",
// "3 h", "2 d".
func waitedFor(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "< 1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int(d/(24*time.Hour)))
}
