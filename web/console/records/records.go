// Package records is the console's record pages: a record's timeline
// (/t/{tenant}/records/..., /t/{tenant}/contacts/...), the contact search,
// the repairs of a record or a lead, and finding an event by its
// provider's id. The directory itself is web/console/lists.
package records

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
	"github.com/tidemark/tidemark/web/httpx"
)

// Store is what the record pages read and change.
type Store interface {
	domain.RecordService
	domain.EventService    // finding an event
	domain.ProviderService // the contact search's providers
}

// Pages serves the record pages.
type Pages struct {
	Console shell.Console
	Store   Store
}

// tenant is the request's tenant.
func (h Pages) tenant(r *http.Request) domain.Tenant { return h.Console.Membership(r).Tenant }

// timelineLimit is how many entries a timeline shows.
const timelineLimit = 200

// directoryBack is the directory link a timeline shows: the filters the
// operator came from (the back parameter), read and written again so
// that nothing but filters reaches the link.
func directoryBack(r *http.Request) string {
	v, err := url.ParseQuery(r.URL.Query().Get("back"))
	if err != nil {
		return views.DirectoryPath(views.RecordFilters{}, "", "")
	}
	return views.DirectoryPath(views.ReadRecordFilters(v), "", "")
}

// HandleTimeline shows one record's timeline; /contacts/{provider}/{id}
// is the one of a contact.
func (h Pages) HandleTimeline(w http.ResponseWriter, r *http.Request) {
	ref := domain.RecordRef{Provider: httpx.PathParam(r, "provider"), ObjectType: httpx.PathParam(r, "object_type"),
		ObjectID: httpx.PathParam(r, "object_id")}
	if ref.ObjectType == "" {
		ref.ObjectType, ref.ObjectID = domain.ContactType, httpx.PathParam(r, "contact_id")
	}
	h.renderTimeline(w, r, ref, http.StatusOK, views.RepairForms{})
}

// HandleContactSearch opens a contact's timeline by id: in the provider
// asked for, or in the only provider that has it. Otherwise the form comes
// back saying what was found.
func (h Pages) HandleContactSearch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.tenant(r)
	provider := r.URL.Query().Get("provider")
	contactID := strings.TrimSpace(r.URL.Query().Get("contact_id"))
	f, err := ContactSearch(r.Context(), h.Store, t.ID, provider, contactID)
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	if contactID != "" {
		found, err := h.Store.ContactProviders(ctx, t.ID, contactID)
		if err != nil {
			h.Console.Error(w, r, err)
			return
		}
		if provider != "" {
			if slices.Contains(found, provider) {
				found = []string{provider}
			} else {
				found = nil
			}
		}
		switch len(found) {
		case 1:
			ref := domain.RecordRef{Provider: found[0], ObjectType: domain.ContactType, ObjectID: contactID}
			http.Redirect(w, r, "/t/"+t.Slug+views.TimelinePath(ref), http.StatusSeeOther)
			return
		case 0:
			if provider != "" {
				f.Message = fmt.Sprintf("No contact %s in provider %s", contactID, provider)
			} else {
				f.Message = fmt.Sprintf("No contact %s in any provider", contactID)
			}
		default:
			f.Message = fmt.Sprintf("Contact %s exists in %d providers; choose one.", contactID, len(found))
			f.Matches = found
		}
	}
	h.Console.Render(w, r, http.StatusOK, views.ContactSearchView(h.Console.Layout(r, "Find a contact", "records"), f))
}

// ContactSearch is the contact search form filled in with the tenant's
// providers; the conflict queue shows it too.
func ContactSearch(ctx context.Context, providers domain.ProviderService, tenantID int64, provider, contactID string) (views.ContactSearch, error) {
	names, err := providers.ProviderNames(ctx, tenantID)
	return views.ContactSearch{Providers: names, Provider: provider, ContactID: contactID}, err
}
