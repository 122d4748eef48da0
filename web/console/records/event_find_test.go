package records_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// Event ids on a conflict and on a timeline link to the events; an event
// the record never had, or another workspace's, is 404.
func TestEventIDsLinkToEvents(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-1", 5, `{"a":1}`, `{"a":2}`)
	b := e.Operator("ops@example.com", false, "acme")
	eventPage := regexp.MustCompile(`^/t/acme/events/[0-9a-f-]{36}/0$`)

	_, doc := b.Get(fmt.Sprintf("/t/acme/conflicts/%d", id))
	links := doc.Find(".conflict-sides a.event-id")
	if links.Length() != 2 {
		t.Fatalf("%d event links on the conflict", links.Length())
	}
	var pages []string
	for i := range 2 {
		status, loc := b.RedirectOf(links.Eq(i).AttrOr("href", ""))
		if status != http.StatusSeeOther || !eventPage.MatchString(loc) {
			t.Fatalf("event link %d: %d to %q", i, status, loc)
		}
		pages = append(pages, loc)
	}
	if pages[0] == pages[1] {
		t.Errorf("both sides open the same event %s", pages[0])
	}
	if _, doc := b.Get(pages[1]); !regexp.MustCompile(`c-1-b`).MatchString(doc.Text()) {
		t.Errorf("the conflicting side's link opened %s, which does not show c-1-b", pages[1])
	}

	_, doc = b.Get("/t/acme/contacts/crm/c-1")
	if n := doc.Find("table.timeline a.event-id").Length(); n < 2 {
		t.Errorf("%d event links on the timeline", n)
	}
	for _, bad := range []string{
		"/t/acme/events/find?provider=crm&type=contact&record=c-1&event=nope",
		"/t/acme/events/find?provider=crm&type=contact&record=c-2&event=c-1-a",
	} {
		if status, _ := b.Get(bad); status != http.StatusNotFound {
			t.Errorf("%s answered %d", bad, status)
		}
	}
	e.Provider("globex", "crm")
	other := e.Operator("other@example.com", false, "globex")
	if status, _ := other.Get("/t/globex/events/find?provider=crm&type=contact&record=c-1&event=c-1-a"); status != http.StatusNotFound {
		t.Errorf("another workspace found acme's event: %d", status)
	}
}
