package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
)

// TestBrowserRepair: an owner sees a HubSpot deletion on a timeline, types
// a wrong record id into the reset form and is told so, then resets the
// record. Not parallel, like TestBrowserOperatorJourney.
func TestBrowserRepair(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.member("owner@example.com", false, domain.RoleOwner, "acme")
	e.deliver1("m1", snapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.deliver1("m2", snapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.deliver1("m3", snapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.deleteContact("c-9", 400)

	step := stepper(ctx, t)
	step("sign in",
		signIn(e.srv.URL+"/login", "owner@example.com"),
		onPage(`#overview-live`, exact("/t/acme")))
	step("a deleted record's timeline",
		chromedp.Navigate(e.srv.URL+"/t/acme/contacts/crm/c-9"),
		onPage(`h1 .deleted`, exact("/t/acme/contacts/crm/c-9")),
		shot(dir, "repair-1-deleted.png"))
	step("a mismatched confirmation",
		chromedp.Navigate(e.srv.URL+"/t/acme/contacts/crm/c-1"),
		onPage(`form.repair-reset input[name=confirm]`, exact("/t/acme/contacts/crm/c-1")),
		chromedp.SendKeys(chromedp.CSS(`form.repair-reset input[name=confirm]`), "c-2"),
		chromedp.Click(chromedp.CSS(`form.repair-reset button[type=submit]`)),
		onPage(`form.repair-reset .error`, exact("/t/acme/records/crm/contact/c-1/reset")),
		shot(dir, "repair-2-mismatch.png"))
	step("reset",
		chromedp.SendKeys(chromedp.CSS(`form.repair-reset input[name=confirm]`), "c-1"),
		chromedp.Click(chromedp.CSS(`form.repair-reset button[type=submit]`)),
		onPage(`h1 .forgotten`, exact("/t/acme/contacts/crm/c-1")),
		onPage(`tr.repair`, exact("/t/acme/contacts/crm/c-1")),
		shot(dir, "repair-3-reset.png"))
}
