package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// directoryRows lists a records page's rows as provider/type/id, in page
// order.
func directoryRows(doc *goquery.Document) []string {
	var rows []string
	doc.Find("table.records tbody tr").Each(func(_ int, tr *goquery.Selection) {
		cells := tr.Find("td")
		rows = append(rows, strings.TrimSpace(cells.Eq(2).Text())+"/"+strings.TrimSpace(cells.Eq(3).Text())+"/"+
			strings.TrimSpace(tr.Find("a.record-link").Text()))
	})
	return rows
}

// directorySeed is eventLogSeed, then a revision conflict on crm c-2 and
// crm c-3 whose snapshot holds markup, indexed for the directory as serve
// does every couple of seconds.
func directorySeed(t *testing.T, e *webtest.Env) {
	t.Helper()
	eventLogSeed(t, e)
	if got := e.Outcome("acme", "crm", e.Secret, "e6", webtest.SnapshotBody("c-2", 5, `{"job_title":"Architect"}`)); got != "revision_conflict" {
		t.Fatalf("c-2 conflict: %s", got)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "e7", webtest.SnapshotBody("c-3", 1, `{"note":"<b>bold</b> script"}`)); got != "applied" {
		t.Fatalf("c-3: %s", got)
	}
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsDirectory: the directory lists every record newest change
// first with its badges, each filter and the search narrow it, matches are
// marked and escaped, and pages follow one another.
func TestRecordsDirectory(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	directorySeed(t, e)
	b := e.Operator("ops@example.com", false, "acme")

	status, doc := b.Get("/t/acme/records")
	if status != http.StatusOK || webtest.Text(doc, "h1") != "Records" || webtest.Text(doc, "nav a.active") != "Records" {
		t.Fatalf("directory: %d, heading %q, active nav %q", status, webtest.Text(doc, "h1"), webtest.Text(doc, "nav a.active"))
	}
	all := []string{"crm/contact/c-3", "erp/deal/d-1", "erp/contact/c-1", "crm/contact/c-2", "crm/contact/c-1"}
	if got := directoryRows(doc); !slices.Equal(got, all) {
		t.Fatalf("rows %v, want %v", got, all)
	}
	marks := webtest.AllText(doc, "table.records td.marks")
	if marks[3] != "1 open conflict" || marks[4] != "1 stale in 7 days" || marks[0] != "" {
		t.Errorf("badges %q", marks)
	}

	for query, want := range map[string][]string{
		"provider=erp":                    {"erp/deal/d-1", "erp/contact/c-1"},
		"type=deal":                       {"erp/deal/d-1"},
		"conflicts=open":                  {"crm/contact/c-2"},
		"q=Director":                      {"erp/contact/c-1", "crm/contact/c-1"},
		"q=Director&provider=crm":         {"crm/contact/c-1"},
		"q=" + url.QueryEscape("c-"):      {"crm/contact/c-3", "erp/contact/c-1", "crm/contact/c-2", "crm/contact/c-1"},
		"q=" + url.QueryEscape("acme -x"): {"crm/contact/c-1"},
		"q=nobody":                        nil,
		"from=2000-01-01T00:00&to=2001-01-01T00:00": nil,
	} {
		status, doc := b.Get("/t/acme/records?" + query)
		if got := directoryRows(doc); status != http.StatusOK || !slices.Equal(got, want) {
			t.Errorf("%s: %d %v, want %v", query, status, got, want)
		}
	}

	// Matches are marked; what a payload says is text, never markup.
	_, doc = b.Get("/t/acme/records?q=Director")
	if got := webtest.AllText(doc, "table.records .match mark"); !slices.Equal(got, []string{"Director", "Director"}) {
		t.Errorf("marked matches %q", got)
	}
	if got := doc.Find(`input[name="q"]`).AttrOr("value", ""); got != "Director" {
		t.Errorf("the form lost the search: %q", got)
	}
	_, doc = b.Get("/t/acme/records?q=bold")
	if doc.Find("table.records .match b").Length() != 0 || !strings.Contains(webtest.Text(doc, "table.records .match"), "<b>bold</b>") {
		t.Errorf("headline of markup: %q", webtest.Text(doc, "table.records .match"))
	}

	for query, want := range map[string]string{
		"from=yesterday":                            `"yesterday" is not a date and time`,
		"q=" + strings.Repeat("w", 201):             "search for at most 200",
		"from=2026-01-02T00:00&to=2026-01-01T00:00": "must be before its end",
	} {
		status, doc := b.Get("/t/acme/records?" + query)
		if status != http.StatusBadRequest || !strings.Contains(webtest.Text(doc, ".records-error"), want) {
			t.Errorf("%s: %d %q, want 400 saying %q", query, status, webtest.Text(doc, ".records-error"), want)
		}
	}

	// Pages of two, each with a link to the next and back to the newest.
	var seen []string
	path := "/t/acme/records?limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the pages never end")
		}
		_, doc := b.Get(path)
		seen = append(seen, directoryRows(doc)...)
		if pages > 0 && doc.Find(`a[rel="first"]`).AttrOr("href", "") != "/t/acme/records?limit=2" {
			t.Errorf("page %d has no link to the newest", pages)
		}
		path = doc.Find(`a[rel="next"]`).AttrOr("href", "")
	}
	if !slices.Equal(seen, all) {
		t.Errorf("paged %v, want %v", seen, all)
	}
}

// TestRecordTimelineFromDirectory: a directory row opens the record's
// timeline, which shows the badges, steps between accepted revisions and
// links back to the directory with its filters.
func TestRecordTimelineFromDirectory(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	directorySeed(t, e)
	if got := e.Outcome("acme", "crm", e.Secret, "e8", webtest.SnapshotBody("c-1", 6, `{"job_title":"VP","company":"Acme"}`)); got != "applied" {
		t.Fatalf("c-1 r6: %s", got)
	}
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := e.Operator("ops@example.com", false, "acme")

	_, doc := b.Get("/t/acme/records?provider=crm&q=acme")
	link := doc.Find("table.records a.record-link").First().AttrOr("href", "")
	if !strings.HasPrefix(link, "/t/acme/contacts/crm/c-1?back=") {
		t.Fatalf("row link %q", link)
	}
	status, doc := b.Get(link)
	if status != http.StatusOK || webtest.Text(doc, "nav a.active") != "Records" {
		t.Fatalf("timeline: %d, active nav %q", status, webtest.Text(doc, "nav a.active"))
	}
	if got := doc.Find("a.back-to-records").AttrOr("href", ""); got != "/t/acme/records?provider=crm&q=acme" {
		t.Errorf("back link %q", got)
	}
	if got := webtest.Text(doc, "h1 .stale-events"); got != "1 stale in 7 days" {
		t.Errorf("stale badge %q", got)
	}
	// Newest first: r6, the duplicate, the stale r4, r5.
	older := doc.Find("tr.accepted").First().Find("a.older")
	target := doc.Find("tr" + older.AttrOr("href", "#none"))
	if older.Text() != "← revision 5" || target.Find(".badge.applied").Length() != 1 || strings.TrimSpace(target.Find("td.num").Text()) != "5" {
		t.Errorf("r6 steps to %q (%s), a row of revision %q", older.Text(), older.AttrOr("href", ""), target.Find("td.num").Text())
	}
	newer := target.Find("a.newer")
	if newer.Text() != "revision 6 →" || target.Find("a.older").Length() != 0 {
		t.Errorf("r5 steps to %q and has an older link: %d", newer.Text(), target.Find("a.older").Length())
	}

	_, doc = b.Get("/t/acme/contacts/crm/c-2")
	if got := webtest.Text(doc, "h1 .open-conflicts"); got != "1 open conflict" {
		t.Errorf("conflict badge %q", got)
	}
	if got := doc.Find("a.back-to-records").AttrOr("href", ""); got != "/t/acme/records" {
		t.Errorf("back link without filters %q", got)
	}
}

// TestEventHistorySearch: q searches the words of each event's snapshot,
// with the other filters, and marks the matches.
func TestEventHistorySearch(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	eventLogSeed(t, e)
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := e.Operator("ops@example.com", false, "acme")

	_, doc := b.Get("/t/acme/events?q=Director")
	ids := eventLogIDs(doc)
	if !slices.Contains(ids, "e1") || !slices.Contains(ids, "e4") || slices.ContainsFunc(ids, func(id string) bool { return id != "e1" && id != "e4" }) {
		t.Fatalf("q=Director: %v", ids)
	}
	for _, m := range webtest.AllText(doc, "table.events td.match") {
		if !strings.Contains(m, "Director") {
			t.Errorf("a row's match %q", m)
		}
	}
	if got := webtest.AllText(doc, "table.events td.match mark"); len(got) != len(ids) || got[0] != "Director" {
		t.Errorf("marks %q for %d rows", got, len(ids))
	}
	if _, doc := b.Get("/t/acme/events?q=Director&provider=erp"); !slices.Equal(eventLogIDs(doc), []string{"e4"}) {
		t.Errorf("q with provider: %v", eventLogIDs(doc))
	}
	if _, doc := b.Get("/t/acme/events?q=" + url.QueryEscape("Director -Acme")); !slices.Equal(eventLogIDs(doc), []string{"e4"}) {
		t.Errorf("excluded word: %v", eventLogIDs(doc))
	}
	if _, doc := b.Get("/t/acme/events"); doc.Find("table.events td.match").Length() != 0 {
		t.Error("a match column without a search")
	}
}

// TestFavicon: the console names an icon that is served, and /favicon.ico
// answers for pages that name none.
func TestFavicon(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme")
	icon := doc.Find(`link[rel="icon"]`).AttrOr("href", "")
	for path, want := range map[string]string{icon: "image/svg+xml", "/favicon.ico": "icon"} {
		resp, err := http.Get(e.Srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), want) || len(body) == 0 {
			t.Errorf("%q: %d %s, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
}
