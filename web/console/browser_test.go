package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// screenshotDir is where the browser test leaves its screenshots for a
// person to look at: ./screenshots at the repository root unless
// TIDEMARK_SCREENSHOTS names another folder.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("TIDEMARK_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	t.Logf("screenshots in %s", abs)
	return abs
}

// newBrowser starts headless Chromium (Debian's package). It runs only
// with TIDEMARK_E2E=1 (see internal/e2e); then a missing browser fails the
// test: tests install nothing, .ci/run does.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	e2e.Require(t, "Chromium")
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install chromium, or run .ci/run)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1366, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first run starts the browser and ties it to its context, so it
	// runs without a deadline; each step then gets its own (see step).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shot saves a full-page screenshot under dir.
func shot(dir, name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), png, 0o644)
	})
}

// stepper returns the step runner of a browser test: each step has 30
// seconds, and a failed one ends the test naming it.
func stepper(ctx context.Context, t *testing.T) func(what string, steps ...chromedp.Action[chromedp.Void]) {
	return func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestBrowserOperatorJourney signs in with a real browser, opens the
// overview, resolves a conflict and sees the queue shrink, rotates a
// provider's secret and looks at the members and tokens; then a viewer
// opens the provider and finds nothing to rotate.
//
// It is not parallel: the package's parallel tests wait until it is done, so
// Chromium has the machine's two cores to itself.
func TestBrowserOperatorJourney(t *testing.T) {
	e2e.Require(t, "Chromium") // before setup makes a database
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOwner, "acme")
	e.Member("viewer@example.com", false, domain.RoleViewer, "acme")
	// History: applied, stale, duplicate, and two revision conflicts.
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.Deliver1("m3", webtest.SnapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.Deliver1("m4", webtest.SnapshotBody("c-1", 12, `{"job_title":"VP Sales","company":"Acme"}`))
	e.Deliver1("m5", webtest.SnapshotBody("c-2", 3, `{"job_title":"CTO"}`))
	e.Deliver1("m6", webtest.SnapshotBody("c-2", 3, `{"job_title":"CEO"}`))

	openBadges := `//table//span[contains(concat(" ", normalize-space(@class), " "), " open ")]`
	// Every step ends by waiting for an element only its target page has
	// and checking the path: the login page and every console page have a
	// main h1, so waiting for one proves nothing about where the browser is.
	step := stepper(ctx, t)
	step("sign in and land on the overview",
		webtest.SignIn(e.Srv.URL+"/login", "ops@example.com"),
		// Only a signed-in page has the sign-out form; only the overview
		// has its live counters.
		webtest.OnPage(`form[action="/logout"]`, webtest.Exact("/t/acme")),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")),
		shot(dir, "1-overview.png"))

	step("open the conflict queue",
		chromedp.Navigate(e.Srv.URL+"/t/acme/conflicts"),
		webtest.OnPage(`#conflict-queue`, webtest.Exact("/t/acme/conflicts")),
		shot(dir, "2-conflicts.png"))
	openBefore := webtest.Count(ctx, t, openBadges)
	step("open one conflict",
		chromedp.Click(chromedp.Search(`//table//a[contains(@href, "/conflicts/")]`)),
		webtest.OnPage(`form[action$="/resolve"] textarea[name=note]`, regexp.MustCompile(`^/t/acme/conflicts/[0-9]+$`)),
		shot(dir, "3-conflict.png"))
	step("keep the accepted snapshot and return to the queue",
		chromedp.SendKeys(chromedp.CSS(`textarea[name=note]`), "Director is confirmed by the account owner"),
		chromedp.Click(chromedp.CSS(`button[name=resolution][value=keep]`)),
		// The conflict page has no queue and, before the keep, no flash.
		webtest.OnPage(`#conflict-queue`, webtest.Exact("/t/acme/conflicts")),
		webtest.OnPage(`.flash.flash-ok`, webtest.Exact("/t/acme/conflicts")),
		shot(dir, "4-after-keep.png"))
	openAfter := webtest.Count(ctx, t, openBadges)
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^Conflict [0-9]+ kept\.$`).MatchString(strings.TrimSpace(flash)) {
		t.Errorf("flash after keep = %q", flash)
	}

	step("look at the event history",
		chromedp.Navigate(e.Srv.URL+"/t/acme/events"),
		webtest.OnPage(`form.event-filters`, webtest.Exact("/t/acme/events")),
		shot(dir, "7-events.png"))
	step("look at a contact timeline",
		chromedp.Navigate(e.Srv.URL+"/t/acme/contacts/crm/c-1"),
		webtest.OnPage(`section.record-state .current-revision`, webtest.Exact("/t/acme/contacts/crm/c-1")),
		shot(dir, "8-timeline.png"))

	step("open the provider",
		chromedp.Navigate(e.Srv.URL+"/t/acme/providers/crm"),
		webtest.OnPage(`form[action$="/providers/crm/rotate"] button`, webtest.Exact("/t/acme/providers/crm")),
		shot(dir, "5-provider.png"))
	step("rotate its secret",
		chromedp.Click(chromedp.CSS(`form[action$="/providers/crm/rotate"] button`)),
		webtest.OnPage(`#provider-secret`, webtest.Exact("/t/acme/providers/crm/rotate")),
		shot(dir, "6-rotated.png"))
	secret, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#provider-secret`)))
	if err != nil {
		t.Fatal(err)
	}
	if openBefore != 2 || openAfter != 1 {
		t.Fatalf("open conflicts %d before and %d after keeping one, want 2 and 1", openBefore, openAfter)
	}
	secret = strings.TrimSpace(secret)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("rotation showed %q, want a whsec_ secret", secret)
	}
	// The new secret signs deliveries at once; the old one still works.
	if got := e.Outcome("acme", "crm", secret, "m7", webtest.SnapshotBody("c-3", 1, `{}`)); got != "applied" {
		t.Fatalf("delivery signed with the rotated secret: %s", got)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "m8", webtest.SnapshotBody("c-3", 2, `{}`)); got != "applied" {
		t.Fatalf("delivery signed with the previous secret: %s", got)
	}

	// A Salesforce provider connected before URL tokens gets one at
	// start-up; its page shows the new URL until an operator confirms it.
	legacy := map[string]string{"org_id": webtest.SfOrg, "revision_field": "SystemModstamp"}
	if _, err := e.Store.ConnectProvider(webtest.CliContext(), e.Tenant("acme").ID, "legacy", "salesforce", "", legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.IssueMissingSecrets(context.Background(), provider.Names(), provider.NewSecret); err != nil {
		t.Fatal(err)
	}
	step("see the issued token's notice",
		chromedp.Navigate(e.Srv.URL+"/t/acme/providers/legacy"),
		webtest.OnPage(`section.issued-secret #issued-url`, webtest.Exact("/t/acme/providers/legacy")),
		shot(dir, "9-issued-token.png"))
	issuedURL, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#issued-url`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(issuedURL, "/webhooks/acme/legacy?token=") {
		t.Fatalf("the notice shows %q, want the webhook URL with its token", issuedURL)
	}
	step("confirm the provider was updated",
		chromedp.Click(chromedp.CSS(`section.issued-secret button[type=submit]`)),
		// The page before the click had the rotate form too: only the
		// redirect after confirming shows the flash.
		webtest.OnPage(`div.flash-ok`, webtest.Exact("/t/acme/providers/legacy")),
		shot(dir, "10-issued-confirmed.png"))
	if n := webtest.Count(ctx, t, `//section[contains(@class, "issued-secret")]`); n != 0 {
		t.Fatalf("the notice is still shown after confirming")
	}

	step("see the workspace's members",
		chromedp.Navigate(e.Srv.URL+"/t/acme/members"),
		webtest.OnPage(`table.members form.member-role`, webtest.Exact("/t/acme/members")),
		shot(dir, "11-members.png"))
	step("see the API tokens",
		chromedp.Navigate(e.Srv.URL+"/t/acme/tokens"),
		webtest.OnPage(`form[action="/t/acme/tokens"] select[name=expires]`, webtest.Exact("/t/acme/tokens")),
		shot(dir, "12-tokens.png"))

	// A viewer reads the same provider page without a single form to change it.
	step("sign out",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		webtest.OnPage(`form[action="/login"] input[name=email]`, webtest.Exact("/login")))
	step("sign in as a viewer and open the provider",
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "viewer@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), webtest.TestPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")),
		chromedp.Navigate(e.Srv.URL+"/t/acme/providers/crm"),
		webtest.OnPage(`#endpoint-url`, webtest.Exact("/t/acme/providers/crm")),
		shot(dir, "13-viewer-provider.png"))
	if n := webtest.Count(ctx, t, `//button[contains(., "Rotate")] | //form[contains(@action, "/rotate")] | //nav//a[contains(@href, "/members")]`); n != 0 {
		t.Fatalf("the viewer is shown %d rotate buttons, forms or members links", n)
	}
	if n := webtest.Count(ctx, t, `//table[contains(@class, "scopes")]//td`); n == 0 {
		t.Fatal("the viewer does not see the provider's scopes")
	}
}
