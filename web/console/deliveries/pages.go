// Package deliveries is the console's delivery pages: the delivery list
// (/t/{tenant}/deliveries), the delivery inspector with its answer,
// processing time, replays and "copy as curl", and bulk replays
// (/t/{tenant}/replays) with their preview and their jobs' deliveries. It
// is a page family of web/console, which registers its routes, behind the
// session, the tenant, the roles and cross-origin protection, and hands it
// the page frame through Console.
package deliveries

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/replay"
	"github.com/tidemark/tidemark/views"
	"github.com/tidemark/tidemark/web/console/shell"
)

// Store is what the delivery pages read and change.
type Store interface {
	domain.DeliveryService
	domain.ReplayService
	domain.EventService // the providers a filter offers
}

// Pages serves the delivery pages.
type Pages struct {
	Console  shell.Console
	Store    Store
	Replayer *replay.Replayer // replays one delivery by hand
	// PublicURL is the base URL providers call ("" means built from each
	// request): "copy as curl" sends there.
	PublicURL string
}

func (p Pages) tenant(r *http.Request) domain.Tenant { return p.Console.Membership(r).Tenant }

// parseLocalTime reads a datetime-local value in UTC and says how precise
// it was (a minute, a second or finer).
func parseLocalTime(field, v string) (time.Time, time.Duration, error) {
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

// SafeBack is where the inspector's back link leads: back when it is a
// path inside the tenant's console (set by the page that linked, e.g.
// the delivery list or a replay job), else the event history. Anything
// that could leave the console (a scheme, a host, "//", a backslash) is
// ignored: never an open redirect.
func SafeBack(slug, back string) string {
	home := "/t/" + slug
	fallback := home + "/events"
	if back == "" || strings.ContainsAny(back, "\\\r\n\t") || strings.HasPrefix(back, "//") {
		return fallback
	}
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return fallback
	}
	if u.Path != home && !strings.HasPrefix(u.Path, home+"/") || strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") {
		return fallback
	}
	return back
}

// pages are the links of a list paged both ways at the current URL, with
// its page positions in the parameters named cursor and before.
func pages(r *http.Request, older, newer, cursor, before string) views.Pages {
	q := r.URL.Query()
	var out views.Pages
	if q.Get(cursor) != "" || q.Get(before) != "" {
		out.Newest = withPage(r, cursor, before, "", "")
	}
	if newer != "" {
		out.Newer = withPage(r, cursor, before, before, newer)
	}
	if older != "" {
		out.Older = withPage(r, cursor, before, cursor, older)
	}
	return out
}

func withPage(r *http.Request, cursor, before, key, value string) string {
	q := r.URL.Query()
	q.Del(cursor)
	q.Del(before)
	if key != "" {
		q.Set(key, value)
	}
	if s := q.Encode(); s != "" {
		return r.URL.Path + "?" + s
	}
	return r.URL.Path
}
