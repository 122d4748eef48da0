package console_test

import (
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserPersonCards: at 1280 px, an operator finds a person by the
// domain of their email, and each card of the person page has its heading
// above its table (the Account card once had it beside the table,
// vertically centred); the lead page and the overview of 7 days are
// screenshotted on the way. Not parallel, like TestBrowserOperatorJourney.
func TestBrowserPersonCards(t *testing.T) {
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	e.Outcome("acme", "crm", e.Secret, "signup-01", webtest.SignupBody("ada@northwind.example", "Ada Lindqvist", "webinar-dec"))
	e.Outcome("acme", "crm", e.Secret, "signup-02", webtest.SignupBody("ben@northwind.example", "Ben Okafor", "webinar-dec"))
	e.Outcome("acme", "crm", e.Secret, "signup-03", webtest.SignupBody("ada@northwind.example", "Ada Lindqvist", "webinar-dec"))
	e.Outcome("acme", "crm", e.Secret, "signup-06", webtest.SignupBody("ada@northwind.example", "Ada Lindqvist", "pricing-guide"))

	step := stepper(ctx, t)
	step("sign in at 1280 px",
		chromedp.EmulateViewport(1280, 900),
		webtest.SignIn(e.Srv.URL+"/login", "ops@example.com"),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")))
	step("the overview of 7 days",
		chromedp.Click(chromedp.CSS(`.period-switch a[data-period="7d"]`)),
		webtest.OnPage(`table.outcome-counts[data-period="7d"]`, webtest.Exact("/t/acme")),
		shot(dir, "people-1-overview-7d-1280.png"))
	step("search people for the domain",
		chromedp.Navigate(e.Srv.URL+"/t/acme/people"),
		webtest.OnPage(`form.people-search`, webtest.Exact("/t/acme/people")),
		chromedp.SendKeys(chromedp.CSS(`form.people-search input[name=q]`), "northwind"),
		chromedp.Click(chromedp.CSS(`form.people-search button[type=submit]`)),
		// The answer names the search in its form's value attribute
		// (typing sets only the property).
		webtest.OnPage(`form.people-search input[name=q][value="northwind"]`, webtest.Exact("/t/acme/people")),
		shot(dir, "people-2-search-1280.png"))
	if n := webtest.Count(ctx, t, `table.people tbody tr`); n != 2 {
		t.Fatalf("the search found %d people, want ada and ben", n)
	}
	step("open ada",
		chromedp.Click(chromedp.CSS(`table.people tbody tr:last-child a.person-link`)),
		webtest.OnPage(`.person-detail .account-card`, regexp.MustCompile(`^/t/acme/people/[0-9]+$`)),
		shot(dir, "people-3-person-1280.png"))
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[][]float64](`[...document.querySelectorAll('.person-detail > section.card')].map(c => {
		const h = c.querySelector('h2').getBoundingClientRect(), t = c.querySelector('table').getBoundingClientRect();
		return [h.top, h.bottom, h.left, t.top, t.left];
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 2 {
		t.Fatalf("%d cards", len(boxes))
	}
	for i, b := range boxes {
		if b[1] > b[3] {
			t.Errorf("card %d: the heading ends at %.0f px, below its table's top at %.0f px", i, b[1], b[3])
		}
		if b[2] > b[4]+1 {
			t.Errorf("card %d: the heading starts at %.0f px, right of its table at %.0f px", i, b[2], b[4])
		}
	}
	if boxes[0][0] != boxes[1][0] {
		t.Errorf("the cards' headings are at %.0f and %.0f px: not on one line", boxes[0][0], boxes[1][0])
	}
	noSidewaysScroll(ctx, t, "the person page at 1280 px")
	step("open the lead of a signup",
		chromedp.Navigate(e.Srv.URL+"/t/acme/records/crm/lead/ada@northwind.example"),
		webtest.OnPage(`table.lead-signups`, webtest.Exact("/t/acme/records/crm/lead/ada@northwind.example")),
		shot(dir, "people-4-lead-1280.png"))
	if n := webtest.Count(ctx, t, `table.lead-signups tbody tr`); n != 3 {
		t.Fatalf("the lead lists %d signups, want 3", n)
	}
}
