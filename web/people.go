package web

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

type personAccountJSON struct {
	Domain string `json:"domain"`
	Name   string `json:"name"`
}

type personTaskJSON struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

type personJSON struct {
	Email     string             `json:"email"`
	Name      string             `json:"name"`
	Account   *personAccountJSON `json:"account"`
	Tasks     []personTaskJSON   `json:"tasks"`
	Campaigns []string           `json:"campaigns"`
}

func newPersonJSON(p domain.Person) personJSON {
	out := personJSON{Email: p.Email, Name: p.Name, Tasks: make([]personTaskJSON, len(p.Tasks)),
		Campaigns: make([]string, len(p.Campaigns))}
	if p.Account != nil {
		out.Account = &personAccountJSON{Domain: p.Account.Domain, Name: p.Account.Name}
	}
	for i, t := range p.Tasks {
		out.Tasks[i] = personTaskJSON{ID: t.ID, Status: t.Status}
	}
	for i, c := range p.Campaigns {
		out.Campaigns[i] = c.Campaign
	}
	return out
}

// handlePeopleAPI answers GET people?email=: that person (or none), or
// without an email the newest people first, a page at a time.
func (s *Server) handlePeopleAPI(w http.ResponseWriter, r *http.Request) {
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	p, err := page(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	people, next, err := s.people.People(r.Context(), apiTenant(r.Context()).ID, email, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]personJSON, len(people))
	for i, person := range people {
		out[i] = newPersonJSON(person)
	}
	if email != "" {
		writeJSON(w, http.StatusOK, map[string]any{"people": out})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"people": out, "next_cursor": nextCursor(next)})
}

// peopleRoutes registers the console pages of people.
func (s *Server) peopleRoutes(r chi.Router) {
	r.Get("/people", s.handlePeople)
	r.Get("/people/{id}", s.handlePerson)
}

// handlePeople lists people newest first, or finds one by email.
func (s *Server) handlePeople(w http.ResponseWriter, r *http.Request) {
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
	people, next, err := s.people.People(ctx, t.ID, p.Email, page)
	status := http.StatusOK
	switch {
	case domain.ErrorCode(err) == domain.EINVALID:
		status, p.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		s.consoleError(w, r, err)
		return
	}
	p.People = people
	if next != "" {
		p.NextURL = base + peopleQueryString(limit, next)
	}
	s.render(w, r, status, views.PeopleView(s.layout(r, "People", "people"), p))
}

// handlePerson shows one person with their account, tasks and campaigns.
func (s *Server) handlePerson(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		s.consoleError(w, r, domain.Errorf(domain.ENOTFOUND, "person not found"))
		return
	}
	d, err := s.people.PersonDetail(ctx, currentTenant(ctx).ID, id)
	if err != nil {
		s.consoleError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, views.PersonView(s.layout(r, d.Email, "people"), d))
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
