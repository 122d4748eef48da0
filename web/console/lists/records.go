package lists

import (
	"net/http"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// HandleRecords shows one page of the records directory, most recently
// changed first, test events' records left out unless asked for. Filters
// the operator got wrong are explained above the results, as on the event
// history.
func (h Pages) HandleRecords(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t := h.Console.Membership(r).Tenant
	values := r.URL.Query()
	f := views.ReadRecordFilters(values)
	f.Search = strings.TrimSpace(f.Search)
	p := views.RecordsPage{Filters: f}
	var err error
	if p.Choices, err = h.Store.EventLogChoices(ctx, t.ID); err != nil {
		h.Console.Error(w, r, err)
		return
	}
	page := listPage(values)
	q, err := directoryQuery(f)
	if c := values.Get("conflicts"); err == nil && c != "" && c != "open" {
		// As the API: a filter that does not say "open" is no filter.
		err = domain.Errorf(domain.EINVALID, "the conflicts filter must be \"open\" or absent; got %q", c)
	}
	if err == nil {
		var info domain.PageInfo
		p.Records, info, err = h.Store.RecordDirectoryPage(ctx, t.ID, q, page)
		p.Pages = pages(page, info, len(p.Records), func(cursor, before string) string {
			return "/t/" + t.Slug + views.DirectoryPagePath(f, values.Get("limit"), cursor, before)
		})
	}
	status, shown := listStatus(err)
	if !shown {
		h.Console.Error(w, r, err)
		return
	}
	if err != nil {
		p.Error = domain.ErrorMessage(err)
	}
	h.Console.Render(w, r, status, views.RecordsView(h.Console.Layout(r, "Records", "records"), p))
}

// directoryQuery reads the directory's filters into a query.
func directoryQuery(f views.RecordFilters) (domain.RecordQuery, error) {
	q := domain.RecordQuery{Provider: f.Provider, ObjectType: f.ObjectType, OpenConflicts: f.OpenConflicts, Search: f.Search,
		WithTests: f.WithTests}
	if err := domain.ValidateSearch(q.Search); err != nil {
		return q, err
	}
	var err error
	if q.From, q.Before, err = ParseLocalRange(f.From, f.To); err != nil {
		return q, err
	}
	return q, q.Validate()
}
