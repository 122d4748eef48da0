package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserRepair: an owner sees a HubSpot deletion on a timeline, types
// a wrong record id into the reset form and is told so, then resets the
// record. Not parallel, like TestBrowserOperatorJourney.
func TestBrowserRepair(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("owner@example.com", false, domain.RoleOwner, "acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.Deliver1("m3", webtest.SnapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.DeleteContact("c-9", 400)

	step := stepper(ctx, t)
	step("sign in",
		webtest.SignIn(e.Srv.URL+"/login", "owner@example.com"),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")))
	step("a deleted record's timeline",
		chromedp.Navigate(e.Srv.URL+"/t/acme/contacts/crm/c-9"),
		webtest.OnPage(`h1 .deleted`, webtest.Exact("/t/acme/contacts/crm/c-9")),
		shot(dir, "repair-1-deleted.png"))
	step("a mismatched confirmation",
		chromedp.Navigate(e.Srv.URL+"/t/acme/contacts/crm/c-1"),
		webtest.OnPage(`form.repair-reset input[name=confirm]`, webtest.Exact("/t/acme/contacts/crm/c-1")),
		chromedp.SendKeys(chromedp.CSS(`form.repair-reset input[name=confirm]`), "c-2"),
		chromedp.Click(chromedp.CSS(`form.repair-reset button[type=submit]`)),
		webtest.OnPage(`form.repair-reset .error`, webtest.Exact("/t/acme/records/crm/contact/c-1/reset")),
		shot(dir, "repair-2-mismatch.png"))
	step("reset",
		chromedp.SendKeys(chromedp.CSS(`form.repair-reset input[name=confirm]`), "c-1"),
		chromedp.Click(chromedp.CSS(`form.repair-reset button[type=submit]`)),
		webtest.OnPage(`h1 .forgotten`, webtest.Exact("/t/acme/contacts/crm/c-1")),
		webtest.OnPage(`tr.repair`, webtest.Exact("/t/acme/contacts/crm/c-1")),
		shot(dir, "repair-3-reset.png"))
}
