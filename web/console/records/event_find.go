package records

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidemark/tidemark/domain"
)

// HandleFindEvent opens a record's event named by the provider's event id
// (the links of timelines and conflicts, which know no delivery): it
// redirects to the event's page, or answers 404.
func (h Pages) HandleFindEvent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	ref := domain.RecordRef{Provider: q.Get("provider"), ObjectType: q.Get("type"), ObjectID: q.Get("record")}
	t := h.tenant(r)
	delivery, seq, err := h.Store.FindEvent(ctx, t.ID, ref, q.Get("event"))
	if err != nil {
		h.Console.Error(w, r, err)
		return
	}
	to := "/t/" + t.Slug + "/events/" + url.PathEscape(delivery) + "/" + strconv.Itoa(seq)
	http.Redirect(w, r, to, http.StatusSeeOther)
}
