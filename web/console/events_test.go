package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// eventLogDealBody is a standard deal.snapshot delivery body.
func eventLogDealBody(deal string, revision int, snapshot string) []byte {
	return []byte(fmt.Sprintf(`{"type":"deal.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"object_id":%q,"revision":%d,"snapshot":%s}}`,
		deal, revision, snapshot))
}

// eventLogIDs lists the event ids of an event-history page, in page order.
func eventLogIDs(doc *goquery.Document) []string {
	var ids []string
	doc.Find("table.events a.event-link").Each(func(_ int, a *goquery.Selection) {
		ids = append(ids, strings.TrimSpace(a.Text()))
	})
	return ids
}

// eventLogSeed delivers to acme/crm and acme/erp, in this order:
// crm e1 c-1 r5 applied (Director), crm e2 c-2 r5 applied, crm e3 c-1 r4
// stale, erp e4 c-1 r1 applied (Director), erp e5 deal d-1 r1 applied,
// crm e1 again (duplicate).
func eventLogSeed(t *testing.T, e *webtest.Env) {
	t.Helper()
	erp := e.Provider("acme", "erp")
	for _, d := range []struct {
		provider, secret, id string
		body                 []byte
		want                 string
	}{
		{"crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 5, `{"job_title":"Director","company":"Acme"}`), "applied"},
		{"crm", e.Secret, "e2", webtest.SnapshotBody("c-2", 5, `{"job_title":"Engineer"}`), "applied"},
		{"crm", e.Secret, "e3", webtest.SnapshotBody("c-1", 4, `{"job_title":"Intern"}`), "stale"},
		{"erp", erp, "e4", webtest.SnapshotBody("c-1", 1, `{"job_title":"Director"}`), "applied"},
		{"erp", erp, "e5", eventLogDealBody("d-1", 1, `{"amount":100}`), "applied"},
		{"crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 5, `{"job_title":"Director","company":"Acme"}`), "duplicate"},
	} {
		if got := e.Outcome("acme", d.provider, d.secret, d.id, d.body); got != d.want {
			t.Fatalf("%s/%s: %s, want %s", d.provider, d.id, got, d.want)
		}
	}
}

// TestEventHistoryFilters: every filter narrows the list to the events it
// names, newest first, and links lead to the event, its record's timeline
// and its conflict.
func TestEventHistoryFilters(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	eventLogSeed(t, e)
	b := e.Operator("ops@example.com", false, "acme")

	status, doc := b.Get("/t/acme/events")
	if status != http.StatusOK || webtest.Text(doc, "h1") != "Event history" {
		t.Fatalf("event history answered %d with heading %q", status, webtest.Text(doc, "h1"))
	}
	if got := eventLogIDs(doc); !slices.Equal(got, []string{"e1", "e5", "e4", "e3", "e2", "e1"}) {
		t.Fatalf("unfiltered: %v", got)
	}
	if got := doc.Find(`select[name="provider"] option`).Length(); got != 3 {
		t.Errorf("provider choices: %d options, want All, crm and erp", got)
	}
	if got := doc.Find(`select[name="type"] option[value="deal"]`).Length(); got != 1 {
		t.Error("the object type choices should offer deal")
	}

	now := time.Now().UTC()
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"provider=erp", []string{"e5", "e4"}},
		{"type=deal", []string{"e5"}},
		{"outcome=stale", []string{"e3"}},
		{"outcome=duplicate", []string{"e1"}},
		{"provider=crm&outcome=applied", []string{"e2", "e1"}},
		{"record=c-1", []string{"e1", "e4", "e3", "e1"}},
		{"record=c-1&provider=crm", []string{"e1", "e3", "e1"}},
		{"record=d-1&type=deal", []string{"e5"}},
		{"record=nobody", nil},
		{"from=" + now.Add(-time.Hour).Format("2006-01-02T15:04"), []string{"e1", "e5", "e4", "e3", "e2", "e1"}},
		{"from=" + now.Add(time.Hour).Format("2006-01-02T15:04"), nil},
		{"to=" + now.Add(-time.Hour).Format("2006-01-02T15:04"), nil},
		{"to=" + now.Add(time.Hour).Format("2006-01-02T15:04") + "&provider=erp", []string{"e5", "e4"}},
		{"contains=" + url.QueryEscape(`{"job_title": "Director"}`), []string{"e1", "e4", "e1"}},
		{"contains=" + url.QueryEscape(`{"job_title": "Director", "company": "Acme"}`), []string{"e1", "e1"}},
		{"contains=" + url.QueryEscape(`{"job_title": "Director"}`) + "&provider=erp", []string{"e4"}},
	} {
		status, doc := b.Get("/t/acme/events?" + c.query)
		if status != http.StatusOK {
			t.Errorf("%s: status %d (%s)", c.query, status, webtest.Text(doc, "[role=alert]"))
			continue
		}
		if got := eventLogIDs(doc); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
		if len(c.want) == 0 && !strings.Contains(webtest.Text(doc, ".empty"), "No events match these filters") {
			t.Errorf("%s: empty state %q", c.query, webtest.Text(doc, ".empty"))
		}
	}

	// Filters stay in the form.
	_, doc = b.Get("/t/acme/events?provider=erp&outcome=stale&record=c-1")
	if doc.Find(`select[name="provider"] option[selected]`).AttrOr("value", "") != "erp" ||
		doc.Find(`select[name="outcome"] option[selected]`).AttrOr("value", "") != "stale" ||
		doc.Find(`input[name="record"]`).AttrOr("value", "") != "c-1" {
		t.Error("the form should show the filters in use")
	}

	// Rows link to the record's timeline and to the event.
	_, doc = b.Get("/t/acme/events?provider=crm&record=c-2")
	if href := doc.Find("table.events a.record-link").AttrOr("href", ""); href != "/t/acme/contacts/crm/c-2" {
		t.Errorf("record link %q", href)
	}
	if href := doc.Find("table.events a.event-link").AttrOr("href", ""); !strings.HasPrefix(href, "/t/acme/events/") {
		t.Errorf("event link %q", href)
	}
}

// TestEventHistoryConflictLink: an event that opened a revision conflict
// links to it, from the list and from its detail.
func TestEventHistoryConflictLink(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 5, `{"a":1}`))
	e.Outcome("acme", "crm", e.Secret, "e2", webtest.SnapshotBody("c-1", 5, `{"a":2}`))
	var conflictID int64
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT id FROM conflicts`).Scan(&conflictID); err != nil {
		t.Fatal(err)
	}
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/events?outcome=revision_conflict")
	want := fmt.Sprintf("/t/acme/conflicts/%d", conflictID)
	if href := doc.Find("table.events a.event-conflict").AttrOr("href", ""); href != want {
		t.Fatalf("conflict link %q, want %q", href, want)
	}
	status, doc := b.Get(doc.Find("table.events a.event-link").AttrOr("href", ""))
	if status != http.StatusOK || doc.Find("a.event-conflict").AttrOr("href", "") != want {
		t.Fatalf("detail answered %d, conflict link %q", status, doc.Find("a.event-conflict").AttrOr("href", ""))
	}
	if !strings.Contains(webtest.Text(doc, ".event-reason"), "revision 5 was already seen with a different snapshot") {
		t.Errorf("reason %q", webtest.Text(doc, ".event-reason"))
	}
}

// TestEventHistoryBadFilters: a filter that cannot be used is explained on
// the page, with the form kept, instead of failing.
func TestEventHistoryBadFilters(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	eventLogSeed(t, e)
	b := e.Operator("ops@example.com", false, "acme")
	for _, c := range []struct{ query, want string }{
		{"contains=" + url.QueryEscape(`{job_title: Director}`), "must be a JSON object"},
		{"contains=" + url.QueryEscape(`["Director"]`), "must be a JSON object"},
		{"contains=" + url.QueryEscape(`{"a":1}}`), "must be a JSON object"},
		{"contains=" + url.QueryEscape(`{"a":"\u0000"}`), "snapshot filter cannot be used"},
		{"from=yesterday", "is not a date and time"},
		{"from=2026-11-29T10:00&to=2026-11-29T09:00", "must be before its end"},
		{"outcome=lost", "unknown outcome"},
		{"cursor=not-a-cursor", "invalid cursor"},
	} {
		status, doc := b.Get("/t/acme/events?" + c.query)
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", c.query, status)
		}
		if msg := webtest.Text(doc, "[role=alert]"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q, want it to say %q", c.query, msg, c.want)
		}
		if doc.Find("form.event-filters").Length() != 1 || len(eventLogIDs(doc)) != 0 {
			t.Errorf("%s: the form should stay, without results", c.query)
		}
	}
	_, doc := b.Get("/t/acme/events?contains=" + url.QueryEscape(`{job_title`))
	if got := doc.Find(`input[name="contains"]`).AttrOr("value", ""); got != "{job_title" {
		t.Errorf("the bad filter should stay in the form for correction, got %q", got)
	}
}

// TestEventHistoryPagination: with a small page size the Next links walk
// every event exactly once, newest first, keeping the filters.
func TestEventHistoryPagination(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("p%d", i)
		e.Outcome("acme", "crm", e.Secret, id, webtest.SnapshotBody(fmt.Sprintf("c-%d", i), 1, `{}`))
		want = append([]string{id}, want...)
	}
	e.Outcome("acme", "crm", e.Secret, "p0", webtest.SnapshotBody("c-0", 1, `{}`)) // a duplicate, filtered out below
	b := e.Operator("ops@example.com", false, "acme")

	var got []string
	path, pages := "/t/acme/events?outcome=applied&limit=3", 0
	for path != "" {
		status, doc := b.Get(path)
		if status != http.StatusOK {
			t.Fatalf("%s answered %d", path, status)
		}
		pages++
		got = append(got, eventLogIDs(doc)...)
		next := doc.Find(`.pager a[rel="next"]`)
		path = next.AttrOr("href", "")
		if path != "" && (!strings.Contains(path, "outcome=applied") || !strings.Contains(path, "limit=3") || !strings.Contains(path, "cursor=")) {
			t.Fatalf("next link %q should carry the filters and a cursor", path)
		}
		if pages > 1 && doc.Find(`.pager a[rel="first"]`).Length() != 1 {
			t.Fatal("a later page should link back to the newest events")
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d pages: %v, want 3 pages of %v", pages, got, want)
	}
}

// TestEventDetailEscapesPayload: the raw payload is shown as text, however
// hostile, indented for reading, with the delivery and the scope.
func TestEventDetailEscapesPayload(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	snapshot := `{"note":"<script>alert(1)</script>","title":"\"'><img src=x>"}`
	e.Outcome("acme", "crm", e.Secret, "x1", webtest.SnapshotBody("c-<b>", 3, snapshot))
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/events")
	href := doc.Find("table.events a.event-link").AttrOr("href", "")
	if doc.Find("table.events img, table.events b").Length() != 0 {
		t.Fatal("the record id became markup in the list")
	}

	status, doc := b.Get(href)
	if status != http.StatusOK {
		t.Fatalf("detail answered %d", status)
	}
	layoutScripts := doc.Find("head script[src]").Length()
	if got := doc.Find("script").Length(); got != layoutScripts || layoutScripts != 2 {
		t.Fatalf("%d script elements, want only the layout's 2", got)
	}
	if doc.Find("img").Length() != 0 || doc.Find("main b").Length() != 0 {
		t.Fatal("the payload became markup")
	}
	payload := doc.Find("pre.payload").Text()
	for _, s := range []string{`"note": "<script>alert(1)</script>"`, `'><img src=x>`, `"contact_id": "c-<b>"`, "\n  "} {
		if !strings.Contains(payload, s) {
			t.Errorf("payload %q should contain %q", payload, s)
		}
	}
	page := webtest.Text(doc, "main")
	for _, s := range []string{"crm", "contact", "snapshot", "x1", "c-<b>", "200", "valid", "applied"} {
		if !strings.Contains(page, s) {
			t.Errorf("detail should show %q", s)
		}
	}
	if href := doc.Find("a.record-link").AttrOr("href", ""); href != "/t/acme/contacts/crm/c-%3Cb%3E" {
		t.Errorf("timeline link %q", href)
	}
}

// TestEventDetailNotFound: unknown events, malformed ids and another
// tenant's events answer 404.
func TestEventDetailNotFound(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 1, `{}`))
	b := e.Operator("ops@example.com", false, "acme")
	_, doc := b.Get("/t/acme/events")
	href := doc.Find("table.events a.event-link").AttrOr("href", "")
	if !strings.HasSuffix(href, "/0") {
		t.Fatalf("event link %q", href)
	}
	for _, path := range []string{
		strings.TrimSuffix(href, "/0") + "/1",
		"/t/acme/events/0191f2c4-7f5e-7a3c-8d2e-1234567890ab/0",
		"/t/acme/events/0191f2c4-7f5e-4a3c-8d2e-1234567890ab/0",
		"/t/acme/events/not-a-uuid/0",
		strings.TrimSuffix(href, "/0") + "/x",
	} {
		if status, doc := b.Get(path); status != http.StatusNotFound || webtest.Text(doc, "h1") != "Not found" {
			t.Errorf("%s answered %d %q", path, status, webtest.Text(doc, "h1"))
		}
	}

	e.Provider("globex", "crm")
	other := e.Operator("x@example.com", false, "globex")
	for _, path := range []string{href, "/t/acme/events", "/t/acme/events?provider=crm"} {
		if status, _ := other.Get(path); status != http.StatusNotFound {
			t.Errorf("another tenant's member got %d for %s", status, path)
		}
	}
	// The same event id under globex is not acme's.
	if status, _ := other.Get(strings.Replace(href, "/t/acme/", "/t/globex/", 1)); status != http.StatusNotFound {
		t.Errorf("acme's event under globex answered %d", status)
	}
}

// TestEventHistoryTimeout: a search that cannot finish within the read
// timeout stops and says how to narrow it.
func TestEventHistoryTimeout(t *testing.T) {
	t.Parallel()
	e := webtest.SetupWith(t, 300*time.Millisecond, webtest.QuietLog())
	e.Outcome("acme", "crm", e.Secret, "e1", webtest.SnapshotBody("c-1", 1, `{}`))
	b := e.Operator("ops@example.com", false, "acme")

	// Hold a lock that the search must wait for until its timeout.
	ctx := context.Background()
	tx, err := e.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE events IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	status, doc := b.Get("/t/acme/events?outcome=applied")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the search took %s", took)
	}
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", status)
	}
	if msg := webtest.Text(doc, "[role=alert]"); !strings.Contains(msg, "took too long") || !strings.Contains(msg, "time range") {
		t.Fatalf("message %q", msg)
	}
	if doc.Find("form.event-filters").Length() != 1 {
		t.Fatal("the form should stay so the search can be narrowed")
	}
}

// TestEventHistoryEmpty: a tenant without events says where they come from.
func TestEventHistoryEmpty(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	status, doc := b.Get("/t/acme/events")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".empty"), "No events yet") {
		t.Fatalf("status %d, empty state %q", status, webtest.Text(doc, ".empty"))
	}
	if doc.Find(".pager").Length() != 0 {
		t.Fatal("an empty history has no pages")
	}
}
