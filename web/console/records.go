package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/httpx"
)

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

// handleTimeline shows one record's timeline; /contacts/{provider}/{id}
// is the one of a contact.
func (h recordPages) handleTimeline(w http.ResponseWriter, r *http.Request) {
	ref := domain.RecordRef{Provider: httpx.PathParam(r, "provider"), ObjectType: httpx.PathParam(r, "object_type"),
		ObjectID: httpx.PathParam(r, "object_id")}
	if ref.ObjectType == "" {
		ref.ObjectType, ref.ObjectID = domain.ContactType, httpx.PathParam(r, "contact_id")
	}
	h.renderTimeline(w, r, ref, http.StatusOK, views.RepairForms{})
}

// handleContactSearch opens a contact's timeline by id: in the provider
// asked for, or in the only provider that has it. Otherwise the form comes
// back saying what was found.
func (h recordPages) handleContactSearch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := currentTenant(ctx)
	provider := r.URL.Query().Get("provider")
	contactID := strings.TrimSpace(r.URL.Query().Get("contact_id"))
	f, err := h.contactSearch(r, provider, contactID)
	if err != nil {
		h.consoleError(w, r, err)
		return
	}
	if contactID != "" {
		found, err := h.records.ContactProviders(ctx, t.ID, contactID)
		if err != nil {
			h.consoleError(w, r, err)
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
	h.render(w, r, http.StatusOK, views.ContactSearchView(h.layout(r, "Find a contact", "records"), f))
}

// contactSearch is the search form filled in with the tenant's providers.
func (h *Handler) contactSearch(r *http.Request, provider, contactID string) (views.ContactSearch, error) {
	providers, err := h.providers.ProviderNames(r.Context(), currentTenant(r.Context()).ID)
	return views.ContactSearch{Providers: providers, Provider: provider, ContactID: contactID}, err
}
