package lists_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func texts(doc *goquery.Document, selector string) []string {
	var out []string
	doc.Find(selector).Each(func(_ int, s *goquery.Selection) {
		out = append(out, strings.Join(strings.Fields(s.Text()), " "))
	})
	return out
}

func index(t *testing.T, e *webtest.Env) {
	t.Helper()
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestEventHistoryPagerBothWays: the history says how many events match
// and where the page is among them, and its Older, Newer and Newest links
// walk the pages with the filters kept.
func TestEventHistoryPagerBothWays(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i := range 7 {
		e.Deliver1(fmt.Sprintf("m%d", i), webtest.SnapshotBody(fmt.Sprintf("c-%d", i), 1, `{"job_title":"VP Sales"}`))
	}
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/events?outcome=applied&limit=3")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	pager := func(doc *goquery.Document) (count, newest, newer, older string) {
		return webtest.Text(doc, ".pager .count"), doc.Find(`.pager a[rel="first"]`).AttrOr("href", ""),
			doc.Find(`.pager a[rel="prev"]`).AttrOr("href", ""), doc.Find(`.pager a[rel="next"]`).AttrOr("href", "")
	}
	count, newest, newer, older := pager(doc)
	first := texts(doc, "table.events a.event-link")
	if count != "1–3 of 7" || newest != "" || newer != "" || !strings.Contains(older, "outcome=applied") || !strings.Contains(older, "cursor=") {
		t.Fatalf("first page: count %q, newest %q, newer %q, older %q", count, newest, newer, older)
	}
	_, doc = b.Get(older)
	count, newest, newer, older = pager(doc)
	second := texts(doc, "table.events a.event-link")
	if count != "4–6 of 7" || newest != "/t/acme/events?limit=3&outcome=applied" || !strings.Contains(newer, "before=") || older == "" {
		t.Fatalf("second page: count %q, newest %q, newer %q, older %q", count, newest, newer, older)
	}
	_, doc = b.Get(older)
	if count, _, newer2, older2 := pager(doc); count != "7–7 of 7" || older2 != "" || newer2 == "" {
		t.Fatalf("last page: count %q, older %q", count, older2)
	} else {
		_, doc = b.Get(newer2)
	}
	if got := texts(doc, "table.events a.event-link"); !slices.Equal(got, second) {
		t.Fatalf("newer from the last page: %v, want %v", got, second)
	}
	_, doc = b.Get(newer)
	if got := texts(doc, "table.events a.event-link"); !slices.Equal(got, first) {
		t.Fatalf("newer from the second page: %v, want %v", got, first)
	}
	if _, _, newer, _ := pager(doc); newer != "" {
		t.Fatalf("the newest page links newer: %q", newer)
	}
}

// TestEventHistoryReadableMatch: a search's match reads as the field and
// its value with the words marked, not as JSON text; the reason is one
// line with its whole text on hover.
func TestEventHistoryReadableMatch(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"VP Sales","company":"Acme"}`))
	index(t, e)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/events?q=sales")
	if got := texts(doc, "table.events td.match .field-match"); !slices.Equal(got, []string{"job_title: VP Sales"}) {
		t.Fatalf("match %q", got)
	}
	if got := texts(doc, "table.events td.match mark"); !slices.Equal(got, []string{"Sales"}) {
		t.Fatalf("marks %q", got)
	}
	if text := doc.Find("table.events td.match").Text(); strings.ContainsAny(text, `"{}`) {
		t.Fatalf("JSON text in the match: %s", text)
	}
	_, doc = b.Get("/t/acme/records?q=sales")
	if got := texts(doc, "table.records .match .field-match"); !slices.Equal(got, []string{"job_title: VP Sales"}) {
		t.Fatalf("directory match %q", got)
	}
	// A stale event's reason: one cell, the whole text on hover.
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 0, `{"job_title":"Intern"}`))
	_, doc = b.Get("/t/acme/events?outcome=stale")
	reason := doc.Find("table.events td.reason").First()
	if title, _ := reason.Attr("title"); title == "" || title != strings.TrimSpace(reason.Text()) {
		t.Fatalf("reason %q, title %q", reason.Text(), title)
	}
}

// TestListsRefuseBadInput: a search that is not UTF-8 and a conflicts
// filter other than "open" answer 400 naming them, not PostgreSQL's error.
func TestListsRefuseBadInput(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	b := e.Operator("ops@example.com", false, "acme")
	for path, want := range map[string]string{
		"/t/acme/events?q=%ff%fe":                            "the search (q) is not valid UTF-8",
		"/t/acme/events?q=%ff%fe&contains=%7B%22a%22%3A1%7D": "the search (q) is not valid UTF-8",
		"/t/acme/records?q=%ff%fe":                           "the search (q) is not valid UTF-8",
		"/t/acme/records?conflicts=maybe":                    `the conflicts filter must be "open" or absent; got "maybe"`,
		"/t/acme/events?before=garbage":                      "invalid cursor",
	} {
		status, doc := b.Get(path)
		alert := webtest.Text(doc, "[role=alert]")
		if status != http.StatusBadRequest || alert != want {
			t.Errorf("%s: %d %q, want 400 %q", path, status, alert, want)
		}
	}
}

// TestEventHistoryEmptySaysWhatIsSet: a filtered history that finds
// nothing names the filters, and mentions the time range only when one is
// set.
func TestEventHistoryEmptySaysWhatIsSet(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"job_title":"CTO"}`))
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/events?contains=" + `%7B%22job_title%22%3A%22Director%22%7D`)
	if got := webtest.Text(doc, ".empty"); got != `No events match these filters: snapshot contains {"job_title":"Director"}. Clear some filters to see more.` {
		t.Errorf("without a time range: %q", got)
	}
	_, doc = b.Get("/t/acme/events?outcome=stale&from=2026-01-01T00:00")
	if got := webtest.Text(doc, ".empty"); !strings.Contains(got, "received from 2026-01-01 00:00 UTC. Widen the time range") {
		t.Errorf("with a time range: %q", got)
	}
}

// TestDirectoryNamesAndHidesTests: the directory shows each record's name
// beside its id and a count; the record a provider page's test event
// writes is hidden until "show test records", then marked.
func TestDirectoryNamesAndHidesTests(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"firstname":"Ada","lastname":"Lovelace"}`))
	owner := e.Operator("owner@example.com", true, "acme")
	if status, _, _ := owner.Post("/t/acme/providers/crm/test", nil); status != http.StatusSeeOther {
		t.Fatalf("test event: %d", status)
	}
	index(t, e)
	_, doc := owner.Get("/t/acme/records")
	if got := texts(doc, "table.records a.record-link"); !slices.Equal(got, []string{"c-1"}) {
		t.Fatalf("records %v", got)
	}
	if got := texts(doc, "table.records td.record-name"); !slices.Equal(got, []string{"Ada Lovelace"}) {
		t.Fatalf("names %v", got)
	}
	if got := webtest.Text(doc, ".pager .count"); got != "1–1 of 1" {
		t.Fatalf("count %q", got)
	}
	_, doc = owner.Get("/t/acme/records?tests=show")
	if got := texts(doc, "table.records a.record-link"); !slices.Equal(got, []string{"tidemark-test", "c-1"}) {
		t.Fatalf("with tests %v", got)
	}
	if got := texts(doc, "table.records .test-record"); !slices.Equal(got, []string{"test"}) {
		t.Fatalf("test marks %v", got)
	}
	if doc.Find(`input[name="tests"][checked]`).Length() != 1 {
		t.Fatal("the box is not checked")
	}
}

// TestAuditLogCounts: the audit log says how many entries match.
func TestAuditLogCounts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	admin := e.Operator("admin@example.com", true, "acme")
	e.Token("acme")
	n := len(e.AuditLog("acme"))
	_, doc := admin.Get("/t/acme/audit")
	if got, want := webtest.Text(doc, ".pager .count"), fmt.Sprintf("1–%d of %d", n, n); n == 0 || got != want {
		t.Fatalf("count %q, want %q", got, want)
	}
	if doc.Find(`.pager a[rel]`).Length() != 0 {
		t.Fatal("one page links to others")
	}
}
