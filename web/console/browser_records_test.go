package console_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserRecordSearch: an operator opens the records directory from
// the nav, searches for a word of a snapshot, opens the record, steps
// through its accepted revisions and comes back to the search; then
// searches the event history. No request of the pages answers 404 (the
// console once lacked an icon). Not parallel, like
// TestBrowserOperatorJourney.
func TestBrowserRecordSearch(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.Deliver1("m3", webtest.SnapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.Deliver1("m4", webtest.SnapshotBody("c-1", 12, `{"job_title":"VP Sales","company":"Acme"}`))
	e.Deliver1("m5", webtest.SnapshotBody("c-2", 3, `{"job_title":"CTO","company":"Initech"}`))
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		notFound []string
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventResponseReceived); ok && r.Response.Status == 404 {
			mu.Lock()
			notFound = append(notFound, r.Response.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	step := stepper(ctx, t)
	timeline := webtest.Exact("/t/acme/contacts/crm/c-1")

	step("sign in",
		webtest.SignIn(e.Srv.URL+"/login", "ops@example.com"),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")))
	step("open Records from the nav",
		chromedp.Click(chromedp.CSS(`nav.sections a[href="/t/acme/records"]`)),
		webtest.OnPage(`table.records`, webtest.Exact("/t/acme/records")),
		shot(dir, "records-1-directory.png"))
	step("search for a word of a snapshot",
		chromedp.SendKeys(chromedp.CSS(`form.record-filters input[name=q]`), "director"),
		chromedp.Click(chromedp.CSS(`form.record-filters button[type=submit]`)),
		webtest.OnPage(`table.records .match mark`, webtest.Exact("/t/acme/records")),
		shot(dir, "records-2-search.png"))
	if n := webtest.Count(ctx, t, `table.records tbody tr`); n != 1 {
		t.Fatalf("the search found %d records, want c-1 alone", n)
	}
	if got := textOf(ctx, t, `table.records .match mark`); got != "Director" {
		t.Fatalf("the match marked %q, want Director", got)
	}
	step("open the record",
		chromedp.Click(chromedp.CSS(`table.records a.record-link`)),
		webtest.OnPage(`a.back-to-records`, timeline),
		shot(dir, "records-3-timeline.png"))
	if got := textOf(ctx, t, `h1 .open-conflicts`) + " / " + textOf(ctx, t, `h1 .stale-events`); got != "1 open conflict / 1 stale in 7 days" {
		t.Fatalf("the timeline's badges say %q", got)
	}
	step("step to the older revision",
		chromedp.Click(chromedp.CSS(`tr.accepted a.older`)),
		webtest.OnPage(`tr:target a.newer`, timeline),
		shot(dir, "records-4-older-revision.png"))
	if got := textOf(ctx, t, `tr:target td.num`); got != "10" {
		t.Fatalf("stepped to revision %q, want 10", got)
	}
	step("and back to the newer one",
		chromedp.Click(chromedp.CSS(`tr:target a.newer`)),
		webtest.OnPage(`tr:target a.older`, timeline))
	if got := textOf(ctx, t, `tr:target td.num`); got != "12" {
		t.Fatalf("stepped to revision %q, want 12", got)
	}
	step("back to the search",
		chromedp.Click(chromedp.CSS(`a.back-to-records`)),
		webtest.OnPage(`table.records .match mark`, webtest.Exact("/t/acme/records")))
	if got := valueOf(ctx, t, `form.record-filters input[name=q]`); got != "director" {
		t.Fatalf("the directory came back searching %q", got)
	}
	step("search the event history",
		chromedp.Click(chromedp.CSS(`nav.sections a[href="/t/acme/events"]`)),
		webtest.OnPage(`form.event-filters input[name=q]`, webtest.Exact("/t/acme/events")),
		chromedp.SendKeys(chromedp.CSS(`form.event-filters input[name=q]`), "manager"),
		chromedp.Click(chromedp.CSS(`form.event-filters button[type=submit]`)),
		webtest.OnPage(`table.events td.match mark`, webtest.Exact("/t/acme/events")),
		shot(dir, "records-5-event-search.png"))
	if got := textOf(ctx, t, `table.events tbody tr .badge`); got != "stale" {
		t.Fatalf("the event search found a %q event, want the stale one", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(notFound) > 0 {
		t.Fatalf("requests answered 404: %s", strings.Join(notFound, ", "))
	}
}

// textOf is the text of the first element a CSS selector matches.
func textOf(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// valueOf is the value of the first form field a CSS selector matches.
func valueOf(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("value of %s: %v", sel, err)
	}
	return s
}
