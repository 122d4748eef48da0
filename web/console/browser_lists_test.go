package console_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserEventHistoryFits: at 1280 px the event history's rows, with
// long record ids, reasons and a search's matches, fit the window: the
// page does not scroll sideways and neither does the table inside it; nor
// does the records directory with its names and matches.
func TestBrowserEventHistoryFits(t *testing.T) {
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	long := "contact-0190f0c2-5b7e-7c3a-9d41-2f6e8a1b3c5d-northwind-traders"
	for i := range 6 {
		e.Deliver1(fmt.Sprintf("msg_01JDX%02dQ8ZK4V7N2M5R9T3W6Y", i), webtest.SnapshotBody(long, 10-i,
			`{"job_title":"VP Sales, Europe, Middle East and Africa","company":"Northwind Traders International","email":"ada.lovelace@northwind.example"}`))
	}
	if _, err := e.Store.IndexSearch(t.Context()); err != nil {
		t.Fatal(err)
	}
	step := stepper(ctx, t)
	step("sign in at 1280 px",
		chromedp.EmulateViewport(1280, 900),
		webtest.SignIn(e.Srv.URL+"/login", "ops@example.com"),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")))
	for _, c := range []struct{ path, table, shot string }{
		{"/t/acme/events", "table.events", "lists-events-1280.png"},
		{"/t/acme/events?q=sales", "table.events", "lists-events-search-1280.png"},
		{"/t/acme/records?q=sales", "table.records", "lists-records-search-1280.png"},
	} {
		step("open "+c.path,
			chromedp.Navigate(e.Srv.URL+c.path),
			webtest.OnPage(c.table, regexp.MustCompile(`^/t/acme/`)),
			shot(dir, c.shot))
		widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf(
			`[document.documentElement.scrollWidth, window.innerWidth,
			  document.querySelector(%[1]q).scrollWidth, document.querySelector(%[1]q).closest('.table-scroll').clientWidth]`, c.table)))
		if err != nil {
			t.Fatal(err)
		}
		if widths[0] > widths[1] || widths[2] > widths[3] {
			t.Errorf("%s at 1280 px: page %d px in a %d px window, table %d px in %d px", c.path, widths[0], widths[1], widths[2], widths[3])
		}
	}
}
