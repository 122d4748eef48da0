// Package people is the console's people pages (/t/{tenant}/people): the
// people, accounts, tasks and campaign memberships lead.signup deliveries
// create, the search over them, and a lead's record page
// (/t/{tenant}/records/{provider}/lead/{email}), which lists the signups of
// the email with their outcomes. It is a page family of web/console, which
// registers its routes behind the session and the tenant and hands it the
// page frame through Console.
package people

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the people pages read.
type Store interface {
	domain.PeopleService
}

// Pages serves the people pages.
type Pages struct {
	Console shell.Console
	Store   Store
	// Timeline shows a record's timeline, which HandleLead shows instead
	// for a "lead" record no signup names: a provider's own lead objects.
	Timeline func(w http.ResponseWriter, r *http.Request, ref domain.RecordRef)
}

// LeadType is the object type of lead signups (domain.LeadSignupType), the
// one whose record page HandleLead serves.
const LeadType = "lead"

// PageSize is how many people one page lists; SignupsLimit how many
// signups a person or lead page lists.
const (
	PageSize     = 50
	SignupsLimit = 200
)

// HandleList lists people newest first, or those a search finds, paged
// both ways.
func (p Pages) HandleList(w http.ResponseWriter, r *http.Request) {
	values := r.URL.Query()
	q := strings.TrimSpace(values.Get("q"))
	if q == "" {
		q = strings.TrimSpace(values.Get("email")) // the address of older links
	}
	page := domain.Page{Limit: PageSize, Cursor: values.Get("cursor"), Before: values.Get("before")}
	limit := values.Get("limit")
	if n, err := strconv.Atoi(limit); err == nil && n > 0 {
		page.Limit = min(n, domain.MaxPageLimit)
	} else {
		limit = ""
	}
	if page.Cursor != "" && page.Before != "" {
		page.Before = "" // older wins, as everywhere
	}
	v := views.PeoplePage{Query: q}
	list, err := p.Store.SearchPeople(r.Context(), p.Console.Membership(r).Tenant.ID, q, page)
	status := http.StatusOK
	switch {
	case domain.ErrorCode(err) == domain.EINVALID:
		status, v.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		p.Console.Error(w, r, err)
		return
	}
	v.People = list.People
	link := func(key, cursor string) string {
		u := url.Values{}
		if q != "" {
			u.Set("q", q)
		}
		if limit != "" {
			u.Set("limit", limit)
		}
		if cursor != "" {
			u.Set(key, cursor)
		}
		base := "/t/" + p.Console.Membership(r).Tenant.Slug + "/people"
		if len(u) == 0 {
			return base
		}
		return base + "?" + u.Encode()
	}
	if list.Older != "" {
		v.Pages.Older = link("cursor", list.Older)
	}
	if list.Newer != "" {
		v.Pages.Newer = link("before", list.Newer)
		v.Pages.Newest = link("", "")
	}
	if status == http.StatusBadRequest {
		v.Pages.Newest = link("", "")
	}
	v.Pages.Count = views.PeopleCount(list)
	p.Console.Render(w, r, status, views.PeopleView(p.Console.Layout(r, "People", "people"), v))
}

// HandlePerson shows one person with their account, tasks, campaigns and
// signups.
func (p Pages) HandlePerson(w http.ResponseWriter, r *http.Request) {
	ctx, tenantID := r.Context(), p.Console.Membership(r).Tenant.ID
	id, err := strconv.ParseInt(httpx.PathParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		p.Console.Error(w, r, domain.Errorf(domain.ENOTFOUND, "person not found"))
		return
	}
	d, err := p.Store.PersonDetail(ctx, tenantID, id)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v := views.PersonPage{PersonDetail: d, SignupsLimit: SignupsLimit}
	if v.Signups, err = p.Store.LeadSignups(ctx, tenantID, "", d.Email, SignupsLimit); err != nil {
		p.Console.Error(w, r, err)
		return
	}
	p.Console.Render(w, r, http.StatusOK, views.PersonView(p.Console.Layout(r, d.Email, "people"), v))
}

// HandleLead shows a lead record: the signups of its email through the
// provider, each with its outcome, and the person they lead to. A lead
// that no signup names and no person holds is a provider's own "lead"
// object, shown by Timeline.
func (p Pages) HandleLead(w http.ResponseWriter, r *http.Request) {
	ctx, tenantID := r.Context(), p.Console.Membership(r).Tenant.ID
	v := views.LeadPage{Provider: httpx.PathParam(r, "provider"), Email: httpx.PathParam(r, "object_id"), SignupsLimit: SignupsLimit}
	signups, err := p.Store.LeadSignups(ctx, tenantID, v.Provider, v.Email, SignupsLimit)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.Signups = signups
	people, _, err := p.Store.People(ctx, tenantID, v.Email, domain.Page{Limit: 1})
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	if len(people) > 0 {
		v.Person = &people[0]
	}
	if len(signups) == 0 && v.Person == nil {
		p.Timeline(w, r, domain.RecordRef{Provider: v.Provider, ObjectType: LeadType, ObjectID: v.Email})
		return
	}
	p.Console.Render(w, r, http.StatusOK, views.LeadView(p.Console.Layout(r, "lead "+v.Email, "records"), v))
}
