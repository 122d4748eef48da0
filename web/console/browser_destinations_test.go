package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserDestinations: an owner opens Destinations from the nav, is
// refused a private address in the form, adds a public one and sees its
// secret, then opens a destination that has been failing; the list and
// the destination's page fit a 1280 px and a 390 px wide window without
// scrolling sideways. Not parallel, like TestBrowserOperatorJourney.
func TestBrowserDestinations(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOwner, "acme")
	for i := range 3 {
		e.Deliver1(fmt.Sprintf("m%d", i), webtest.SnapshotBody(fmt.Sprintf("c-%d", i), 1, `{"job_title":"Analyst"}`))
	}
	tenant := e.Tenant("acme").ID
	// A destination with a long URL that has been failing: its attempts
	// are what the sender would have recorded.
	failing, _, err := e.Store.CreateDestination(webtest.CliContext(), tenant, stream.NewDestination{
		URL:      "https://203.0.113.10/integrations/tidemark/webhooks/receive?account=4f1c2a9e-7b3d-4e8a-9c61-0d2f5b7e8a13",
		Provider: "crm", Types: []string{"record.applied", "record.deleted"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.RewindDestination(webtest.CliContext(), tenant, failing.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.Exec(fmt.Sprintf(`INSERT INTO destination_attempts (tenant_id, destination_id, position, attempted_at, status, error, duration_ms)
		SELECT %d, %d, 1 + i %% 3, now() - (30 - i) * interval '37 seconds',
		       CASE WHEN i %% 4 = 0 THEN 0 ELSE 502 END,
		       CASE WHEN i %% 4 = 0 THEN 'Post "https://203.0.113.10/integrations/tidemark/webhooks/receive": dial tcp 203.0.113.10:443: i/o timeout'
		            ELSE 'answered 502 Bad Gateway: <html><head><title>502 Bad Gateway</title></head><body>upstream unavailable</body></html>' END,
		       120 + i * 37
		FROM generate_series(1, 30) i`, tenant, failing.ID))
	e.Exec(fmt.Sprintf(`UPDATE destinations SET status = 'failing', status_reason = 'failing since 2026-11-30 08:12 UTC (72h): answered 502 Bad Gateway' WHERE id = %d`, failing.ID))

	step := stepper(ctx, t)
	list := webtest.Exact("/t/acme/destinations")
	detail := regexp.MustCompile(`^/t/acme/destinations/[0-9]+$`)
	step("sign in at 1280 px",
		chromedp.EmulateViewport(1280, 900),
		webtest.SignIn(e.Srv.URL+"/login", "ops@example.com"),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")))
	step("open Destinations from the nav",
		chromedp.Click(chromedp.CSS(`nav.sections a[href="/t/acme/destinations"]`)),
		webtest.OnPage(`table.destinations`, list),
		shot(dir, "destinations-1-list-1280.png"))
	noSidewaysScroll(ctx, t, "the list at 1280 px")

	step("add a destination on a private address",
		chromedp.SendKeys(chromedp.CSS(`.dest-new input[name=url]`), "http://169.254.169.254/latest/meta-data"),
		chromedp.Click(chromedp.CSS(`.dest-new button[type=submit]`)),
		webtest.OnPage(`.dest-new [role=alert]`, list),
		shot(dir, "destinations-2-refused-1280.png"))
	if got := textOf(ctx, t, `.dest-new [role=alert]`); !regexp.MustCompile(`link-local address`).MatchString(got) {
		t.Fatalf("the refusal says %q", got)
	}
	step("add one on a public address",
		chromedp.SetValue(chromedp.CSS(`.dest-new input[name=url]`), "https://203.0.113.20/hooks/crm"),
		chromedp.Click(chromedp.CSS(`.dest-new button[type=submit]`)),
		webtest.OnPage(`#destination-secret`, list),
		shot(dir, "destinations-3-created-1280.png"))
	if n := webtest.Count(ctx, t, `table.destinations tbody tr`); n != 2 {
		t.Fatalf("the list has %d destinations after the create, want 2", n)
	}

	step("open the failing destination",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`table.destinations a[href="/t/acme/destinations/%d"]`, failing.ID))),
		webtest.OnPage(`table.dest-attempts`, detail),
		shot(dir, "destinations-4-detail-1280.png"))
	noSidewaysScroll(ctx, t, "the destination's page at 1280 px")

	step("the list at 390 px",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(e.Srv.URL+"/t/acme/destinations"),
		webtest.OnPage(`table.destinations`, list),
		shot(dir, "destinations-5-list-390.png"))
	noSidewaysScroll(ctx, t, "the list at 390 px")
	step("the destination's page at 390 px",
		chromedp.Navigate(fmt.Sprintf("%s/t/acme/destinations/%d", e.Srv.URL, failing.ID)),
		webtest.OnPage(`table.dest-attempts`, detail),
		shot(dir, "destinations-6-detail-390.png"),
		// What a phone shows at a time: the top, and the first attempts.
		windowShot(dir, "destinations-7-detail-390-top.png"),
		chromedp.ScrollIntoView(chromedp.CSS(`#attempts`)),
		windowShot(dir, "destinations-8-attempts-390.png"))
	noSidewaysScroll(ctx, t, "the destination's page at 390 px")
}

// windowShot saves what the window shows under dir.
func windowShot(dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.CaptureScreenshot()(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), png, 0o644)
	})
}

// noSidewaysScroll fails the test when the page is wider than the window.
func noSidewaysScroll(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](
		`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if widths[0] > widths[1] {
		t.Errorf("%s is %d px wide in a %d px window: it scrolls sideways", what, widths[0], widths[1])
	}
}
