// Package conflicts is the console's conflict pages: the queue of a
// workspace's conflicts (/t/{tenant}/conflicts), one conflict beside the
// record it disputes, and its resolution by an operator.
package conflicts

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
	"github.com/tidemark/tidemark/web/console/records"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the conflict pages read and change.
type Store interface {
	domain.ConflictService
	domain.ProviderService   // the queue's contact search
	domain.AppJournalService // the install a snapshot is asked through
}

// Pages serves the conflict pages.
type Pages struct {
	Console   shell.Console
	Store     Store
	Now       func() time.Time
	Snapshots SnapshotAsker // nil: no provider is asked for snapshots
}

// tenant is the request's tenant.
func (h Pages) tenant(r *http.Request) domain.Tenant { return h.Console.Membership(r).Tenant }

// How much of the queue one page shows.
const (
	queueOpenLimit     = 100
	queueResolvedLimit = 50
)

// HandleConflictQueue shows open conflicts, oldest first, then resolved
// ones. htmx polls it and gets the queue fragment alone, so a poll neither
// re-renders the page frame nor takes the pending flash.
func (h Pages) HandleConflictQueue(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.tenant(r)
	query := r.URL.Query()
	open := domain.Page{Limit: queueOpenLimit, Cursor: query.Get("open_after"), Before: query.Get("open_before")}
	resolved := domain.Page{Limit: queueResolvedLimit, Cursor: query.Get("resolved_after"), Before: query.Get("resolved_before")}
	q, err := h.Store.ConflictQueue(ctx, t.ID, open, resolved)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	now := h.Now()
	base := "/t/" + t.Slug + "/conflicts"
	p := views.ConflictQueuePage{OpenTotal: q.OpenTotal, PollURL: base + queryString(query),
		OpenPages: queuePages(base, query, "open", q.OpenPages, len(q.Open), q.OpenTotal, 0),
		ResolvedPages: queuePages(base, query, "resolved", q.ResolvedPages, len(q.Resolved), q.ResolvedTotal,
			domain.ConflictCountBound)}
	for _, c := range q.Open {
		p.Open = append(p.Open, views.QueuedConflict{Conflict: c, Age: shell.WaitedFor(now.Sub(c.DetectedAt))})
	}
	for _, c := range q.Resolved {
		p.Resolved = append(p.Resolved, views.QueuedConflict{Conflict: c})
	}
	w.Header().Add("Vary", "HX-Request")
	if r.Header.Get("HX-Request") == "true" {
		page := views.ConflictQueueView(views.Layout{Tenant: t}, p)
		h.Console.Render(w, r, http.StatusOK, templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return templ.RenderFragments(ctx, w, page, "conflict-queue")
		}))
		return
	}
	if p.Search, err = records.ContactSearch(ctx, h.Store, t.ID, "", ""); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, http.StatusOK, views.ConflictQueueView(h.Console.Layout(r, "Conflicts", "conflicts"), p))
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

// HandleConflict shows one conflict beside the record it disputes.
func (h Pages) HandleConflict(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := conflictIDParam(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	d, err := h.Store.ConflictDetail(ctx, h.tenant(r).ID, id)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	p := views.ConflictPage{ConflictDetail: d, Age: shell.WaitedFor(h.Now().Sub(d.DetectedAt)),
		Diff: views.DiffFields(d.AcceptedSnapshot, d.ConflictingSnapshot)}
	if p.PrevOpen, p.NextOpen, err = h.Store.OpenNeighbours(ctx, h.tenant(r).ID, id); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if p.CanAskSnapshot, err = h.canAskSnapshot(r, d.Conflict); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	h.Console.Render(w, r, http.StatusOK, views.ConflictView(h.Console.Layout(r, fmt.Sprintf("Conflict %d", id), "conflicts"), p))
}

// HandleResolveConflict keeps or adopts, on behalf of the signed-in
// operator. A refusal (already resolved, record moved on, bad input) goes
// back to the conflict with the reason; success goes to the queue.
func (h Pages) HandleResolveConflict(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := conflictIDParam(r)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	t := h.tenant(r)
	back := fmt.Sprintf("/t/%s/conflicts/%d", t.Slug, id)
	note := strings.TrimSpace(r.PostFormValue("note"))
	if utf8.RuneCountInString(note) > domain.MaxConflictNote {
		h.Console.RedirectWithFlash(w, r, back, "error",
			fmt.Sprintf("The note is too long: keep it under %d characters.", domain.MaxConflictNote))
		return
	}
	c, err := h.Store.ResolveConflict(ctx, t.ID, id, r.PostFormValue("resolution"), note, h.Console.User(r).Email)
	switch domain.ErrorCode(err) {
	case domain.ECONFLICT, domain.EINVALID:
		h.Console.RedirectWithFlash(w, r, back, "error", "Conflict "+strconv.FormatInt(id, 10)+" was not resolved: "+domain.ErrorMessage(err))
		return
	}
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	msg := fmt.Sprintf("Conflict %d kept.", c.ID)
	if c.Status == domain.ConflictAdopted {
		msg = fmt.Sprintf("Conflict %d adopted: the record now holds the conflicting snapshot at revision %d.", c.ID, c.Revision)
	}
	h.Console.RedirectWithFlash(w, r, "/t/"+t.Slug+"/conflicts", "ok", msg)
}
