package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// peoplePageSize is how many people one console page lists.
const peoplePageSize = 50

// handlePeople lists people newest first, or finds one by email.
func (h peoplePages) handlePeople(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	values := r.URL.Query()
	p := views.PeoplePage{Email: strings.TrimSpace(values.Get("email"))}
	page := domain.Page{Limit: peoplePageSize, Cursor: values.Get("cursor")}
	limit := values.Get("limit")
	if n, err := strconv.Atoi(limit); err == nil && n > 0 {
		page.Limit = min(n, domain.MaxPageLimit)
	} else {
		limit = ""
	}
	base := "/t/" + t.Slug + "/people"
	if page.Cursor != "" && p.Email == "" {
		p.FirstURL = base + peopleQueryString(limit, "")
	}
	people, next, err := h.people.People(ctx, t.ID, p.Email, page)
	status := http.StatusOK
	switch {
	case domain.ErrorCode(err) == domain.EINVALID:
		status, p.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		h.consoleError(w, r, err)
		return
	}
	p.People = people
	if next != "" {
		p.NextURL = base + peopleQueryString(limit, next)
	}
	h.render(w, r, status, views.PeopleView(h.layout(r, "People", "people"), p))
}

// handlePerson shows one person with their account, tasks and campaigns.
func (h peoplePages) handlePerson(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		h.consoleError(w, r, domain.Errorf(domain.ENOTFOUND, "person not found"))
		return
	}
	d, err := h.people.PersonDetail(ctx, currentTenant(ctx).ID, id)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, views.PersonView(h.layout(r, d.Email, "people"), d))
}

// peopleQueryString carries the page size and cursor, when set, into a page link.
func peopleQueryString(limit, cursor string) string {
	v := url.Values{}
	if limit != "" {
		v.Set("limit", limit)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
