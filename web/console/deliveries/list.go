package deliveries

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// listPageSize is how many deliveries the list shows at a time; countCap
// bounds its count ("more than 1,000").
const (
	listPageSize = 50
	countCap     = 1000
)

// HandleList is the delivery list, newest first, filtered by provider,
// status (an HTTP status, a class such as 4xx, accepted or refused) and
// time, paged both ways with its count.
func (p Pages) HandleList(w http.ResponseWriter, r *http.Request) {
	ctx, t := r.Context(), p.tenant(r)
	q := r.URL.Query()
	v := views.DeliveryListPage{Filters: views.DeliveryListFilters{Provider: q.Get("provider"), Status: q.Get("status"),
		From: q.Get("from"), To: q.Get("to")}}
	choices, err := p.Store.EventLogChoices(ctx, t.ID)
	if err != nil {
		p.Console.Error(w, r, err)
		return
	}
	v.Providers = choices.Providers
	status := http.StatusOK
	f, err := listFilter(v.Filters)
	if err == nil {
		var page domain.DeliveryLogPage
		page, err = p.Store.DeliveryLog(ctx, t.ID, f, domain.Page{Limit: listPageSize, Cursor: q.Get("cursor"), Before: q.Get("before")})
		if err == nil {
			var n int64
			if n, err = p.Store.CountDeliveries(ctx, t.ID, f, countCap); err == nil {
				v.Deliveries = page.Deliveries
				v.Pages = pages(r, page.Older, page.Newer, "cursor", "before")
				v.Pages.Count = countText(n, len(page.Deliveries), q.Get("cursor") == "" && q.Get("before") == "")
			}
		}
	}
	switch {
	case errors.Is(err, domain.ErrReadTimeout):
		status, v.Error = http.StatusServiceUnavailable, domain.ErrReadTimeout.Message
	case domain.ErrorCode(err) == domain.EINVALID:
		status, v.Error = http.StatusBadRequest, domain.ErrorMessage(err)
	case err != nil:
		p.Console.Error(w, r, err)
		return
	}
	// The inspector's back link returns here.
	v.Back = r.URL.RequestURI()
	p.Console.Render(w, r, status, views.DeliveryListView(p.Console.Layout(r, "Deliveries", "deliveries"), v))
}

// countText says how many match: "1–50 of 3,100" on the newest page,
// "3,100 deliveries" on the others (their offset is not known), "more
// than 1,000" past the count's cap.
func countText(n int64, shown int, newest bool) string {
	if n > countCap {
		return "more than " + views.Thousands(countCap) + " deliveries"
	}
	if newest && shown > 0 {
		return "1–" + strconv.Itoa(shown) + " of " + views.Thousands(n)
	}
	return views.Thousands(n) + " deliveries"
}

// listFilter reads the list's filters: status is an HTTP status (401), a
// class (4xx), accepted (2xx) or refused (4xx: Tidemark stores no 5xx
// answer, a delivery it could not store is not in the log).
func listFilter(v views.DeliveryListFilters) (domain.DeliveryFilter, error) {
	f := domain.DeliveryFilter{Provider: v.Provider}
	switch s := v.Status; {
	case s == "":
	case s == "accepted":
		f.Class = 2
	case s == "refused":
		f.Class = 4
	case len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5':
		f.Class = int(s[0] - '0')
	default:
		n, err := strconv.Atoi(s)
		if err != nil {
			return f, domain.Errorf(domain.EINVALID, "status must be an HTTP status such as 401, a class such as 4xx, accepted or refused; got %q", s)
		}
		f.Status = n
	}
	if v.From != "" {
		from, _, err := parseLocalTime("from", v.From)
		if err != nil {
			return f, err
		}
		f.From = from
	}
	if v.To != "" {
		to, precision, err := parseLocalTime("to", v.To)
		if err != nil {
			return f, err
		}
		f.Before = to.Add(precision)
	}
	return f, f.Validate()
}
