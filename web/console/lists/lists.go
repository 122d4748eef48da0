// Package lists is the console's long lists: the event history
// (/t/{tenant}/events) with its event pages, the records directory
// (/t/{tenant}/records) and the audit logs (/t/{tenant}/audit,
// /admin/audit), each filtered, paged both ways (newest, newer, older) and
// counted. It is a page family of web/console, which registers its routes
// behind the session, the tenant and the roles, and hands it the page frame
// through Console.
package lists

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Pages serves the lists.
type Pages struct {
	Console shell.Console
	Store   Store
}

// Store is what the lists read.
type Store interface {
	domain.EventService
	domain.RecordService
	domain.AuditService
}

// PageSize is how many entries one page of a list shows; ?limit= asks for
// fewer or more, up to domain.MaxPageLimit.
const PageSize = 50

// CountUpTo is how far a list counts its matches; beyond it the page says
// "more than 1,000": counting further costs more than it tells (a filtered
// count of 10,000 took 130 ms on a million events).
const CountUpTo = 1000

// listStatus is the status of a list page whose read ended with err; shown
// is false for errors the page cannot explain above its form.
func listStatus(err error) (status int, shown bool) {
	switch {
	case err == nil:
		return http.StatusOK, true
	case errors.Is(err, domain.ErrReadTimeout):
		return http.StatusServiceUnavailable, true
	case domain.ErrorCode(err) == domain.EINVALID:
		return http.StatusBadRequest, true
	}
	return 0, false
}

// listPage is the page a list asks for: its cursor or before, ?limit= when
// it is a positive number, else PageSize, counted up to CountUpTo.
func listPage(values url.Values) domain.Page {
	page := domain.Page{Limit: PageSize, Cursor: values.Get("cursor"), Before: values.Get("before"), Count: CountUpTo}
	if page.Cursor != "" {
		page.Before = ""
	}
	if n, err := strconv.Atoi(values.Get("limit")); err == nil && n > 0 {
		page.Limit = n
	}
	return page
}

// pages are the pager's links and count for a page of shown entries:
// link(cursor, before) writes a page's URL with the list's filters.
func pages(page domain.Page, info domain.PageInfo, shown int, link func(cursor, before string) string) views.Pages {
	p := views.Pages{Count: views.PageCount(info, page.Count, shown)}
	if info.Prev != "" || page.Cursor != "" || page.Before != "" {
		p.Newest = link("", "")
	}
	if info.Prev != "" {
		p.Newer = link("", info.Prev)
	}
	if info.Next != "" {
		p.Older = link(info.Next, "")
	}
	return p
}

// withPosition adds the page size, cursor and before to a list's query
// values, when set.
func withPosition(v url.Values, limit, cursor, before string) string {
	for _, kv := range [][2]string{{"limit", limit}, {"cursor", cursor}, {"before", before}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// ParseLocalRange reads the from and to fields of a filter form
// (datetime-local, UTC; either may be empty) as [from, before): "to"
// includes the whole minute (or second) it names.
func ParseLocalRange(from, to string) (start, before time.Time, err error) {
	if from != "" {
		if start, _, err = ParseLocalTime("from", from); err != nil {
			return start, before, err
		}
	}
	if to != "" {
		end, precision, err := ParseLocalTime("to", to)
		if err != nil {
			return start, before, err
		}
		before = end.Add(precision)
	}
	return start, before, nil
}

// ParseLocalTime reads a datetime-local value as UTC and says how precise
// it was.
func ParseLocalTime(field, v string) (time.Time, time.Duration, error) {
	for _, layout := range []struct {
		layout    string
		precision time.Duration
	}{{"2006-01-02T15:04", time.Minute}, {"2006-01-02T15:04:05", time.Second}, {"2006-01-02T15:04:05.999999999", time.Nanosecond}} {
		if t, err := time.ParseInLocation(layout.layout, v, time.UTC); err == nil {
			return t, layout.precision, nil
		}
	}
	return time.Time{}, 0, domain.Errorf(domain.EINVALID, "%q is not a date and time for %q; use the form 2026-11-29T10:00", v, field)
}
