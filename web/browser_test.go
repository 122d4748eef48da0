package web_test

import (
	"context"
	"fmt"
	"net/url"
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
)

// screenshotDir is where the browser test leaves its screenshots for a
// person to look at: ./screenshots at the repository root unless
// TIDEMARK_SCREENSHOTS names another folder.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("TIDEMARK_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "screenshots")
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

// onPage waits until the browser shows the page a step was meant to reach:
// unique is a CSS selector that only that page has (never the page the
// step started from, or the wait could succeed before the navigation), and
// path must match the location's whole path. A failed check says which
// page the browser is on instead.
func onPage(unique string, path *regexp.Regexp) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.WaitVisible(chromedp.CSS(unique))(ctx, tg); err != nil {
			// ctx may be what ran out: ask where the browser is on a fresh one.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			loc, _ := chromedp.Location()(lctx, tg)
			return fmt.Errorf("waiting for %s (want path %s) on %s: %w", unique, path, loc, err)
		}
		loc, err := chromedp.Location()(ctx, tg)
		if err != nil {
			return err
		}
		u, err := url.Parse(loc)
		if err != nil {
			return err
		}
		if !path.MatchString(u.Path) {
			return fmt.Errorf("%s is on %s, want path %s", unique, u.Path, path)
		}
		return nil
	})
}

// exact matches exactly one path.
func exact(path string) *regexp.Regexp { return regexp.MustCompile("^" + regexp.QuoteMeta(path) + "$") }

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

// count returns how many elements match an XPath or CSS search right now.
func count(ctx context.Context, t *testing.T, search string) int {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.Search(search), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatalf("count %s: %v", search, err)
	}
	return len(nodes)
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

// signIn opens the login page at loginURL (which may carry ?next=) and
// signs in as email with testPassword; the step goes on to wait for the
// page it lands on.
func signIn(loginURL, email string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, a := range []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(loginURL),
			onPage(`form[action="/login"] input[name=email]`, exact("/login")),
			chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), testPassword),
			chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		} {
			if _, err := a(ctx, tg); err != nil {
				return err
			}
		}
		return nil
	})
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
	e := setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.member("ops@example.com", false, domain.RoleOwner, "acme")
	e.member("viewer@example.com", false, domain.RoleViewer, "acme")
	// History: applied, stale, duplicate, and two revision conflicts.
	e.deliver1("m1", snapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.deliver1("m2", snapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.deliver1("m3", snapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.deliver1("m2", snapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.deliver1("m4", snapshotBody("c-1", 12, `{"job_title":"VP Sales","company":"Acme"}`))
	e.deliver1("m5", snapshotBody("c-2", 3, `{"job_title":"CTO"}`))
	e.deliver1("m6", snapshotBody("c-2", 3, `{"job_title":"CEO"}`))

	openBadges := `//table//span[contains(concat(" ", normalize-space(@class), " "), " open ")]`
	// Every step ends by waiting for an element only its target page has
	// and checking the path: the login page and every console page have a
	// main h1, so waiting for one proves nothing about where the browser is.
	step := stepper(ctx, t)
	step("sign in and land on the overview",
		signIn(e.srv.URL+"/login", "ops@example.com"),
		// Only a signed-in page has the sign-out form; only the overview
		// has its live counters.
		onPage(`form[action="/logout"]`, exact("/t/acme")),
		onPage(`#overview-live`, exact("/t/acme")),
		shot(dir, "1-overview.png"))

	step("open the conflict queue",
		chromedp.Navigate(e.srv.URL+"/t/acme/conflicts"),
		onPage(`#conflict-queue`, exact("/t/acme/conflicts")),
		shot(dir, "2-conflicts.png"))
	openBefore := count(ctx, t, openBadges)
	step("open one conflict",
		chromedp.Click(chromedp.Search(`//table//a[contains(@href, "/conflicts/")]`)),
		onPage(`form[action$="/resolve"] textarea[name=note]`, regexp.MustCompile(`^/t/acme/conflicts/[0-9]+$`)),
		shot(dir, "3-conflict.png"))
	step("keep the accepted snapshot and return to the queue",
		chromedp.SendKeys(chromedp.CSS(`textarea[name=note]`), "Director is confirmed by the account owner"),
		chromedp.Click(chromedp.CSS(`button[name=resolution][value=keep]`)),
		// The conflict page has no queue and, before the keep, no flash.
		onPage(`#conflict-queue`, exact("/t/acme/conflicts")),
		onPage(`.flash.flash-ok`, exact("/t/acme/conflicts")),
		shot(dir, "4-after-keep.png"))
	openAfter := count(ctx, t, openBadges)
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^Conflict [0-9]+ kept\.$`).MatchString(strings.TrimSpace(flash)) {
		t.Errorf("flash after keep = %q", flash)
	}

	step("look at the event history",
		chromedp.Navigate(e.srv.URL+"/t/acme/events"),
		onPage(`form.event-filters`, exact("/t/acme/events")),
		shot(dir, "7-events.png"))
	step("look at a contact timeline",
		chromedp.Navigate(e.srv.URL+"/t/acme/contacts/crm/c-1"),
		onPage(`section.record-state .current-revision`, exact("/t/acme/contacts/crm/c-1")),
		shot(dir, "8-timeline.png"))

	step("open the provider",
		chromedp.Navigate(e.srv.URL+"/t/acme/providers/crm"),
		onPage(`form[action$="/providers/crm/rotate"] button`, exact("/t/acme/providers/crm")),
		shot(dir, "5-provider.png"))
	step("rotate its secret",
		chromedp.Click(chromedp.CSS(`form[action$="/providers/crm/rotate"] button`)),
		onPage(`#provider-secret`, exact("/t/acme/providers/crm/rotate")),
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
	if got := e.outcome("acme", "crm", secret, "m7", snapshotBody("c-3", 1, `{}`)); got != "applied" {
		t.Fatalf("delivery signed with the rotated secret: %s", got)
	}
	if got := e.outcome("acme", "crm", e.secret, "m8", snapshotBody("c-3", 2, `{}`)); got != "applied" {
		t.Fatalf("delivery signed with the previous secret: %s", got)
	}

	// A Salesforce provider connected before URL tokens gets one at
	// start-up; its page shows the new URL until an operator confirms it.
	legacy := map[string]string{"org_id": sfOrg, "revision_field": "SystemModstamp"}
	if _, err := e.store.ConnectProvider(cliContext(), e.tenant("acme").ID, "legacy", "salesforce", "", legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.IssueMissingSecrets(context.Background(), provider.Names(), provider.NewSecret); err != nil {
		t.Fatal(err)
	}
	step("see the issued token's notice",
		chromedp.Navigate(e.srv.URL+"/t/acme/providers/legacy"),
		onPage(`section.issued-secret #issued-url`, exact("/t/acme/providers/legacy")),
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
		onPage(`div.flash-ok`, exact("/t/acme/providers/legacy")),
		shot(dir, "10-issued-confirmed.png"))
	if n := count(ctx, t, `//section[contains(@class, "issued-secret")]`); n != 0 {
		t.Fatalf("the notice is still shown after confirming")
	}

	step("see the workspace's members",
		chromedp.Navigate(e.srv.URL+"/t/acme/members"),
		onPage(`table.members form.member-role`, exact("/t/acme/members")),
		shot(dir, "11-members.png"))
	step("see the API tokens",
		chromedp.Navigate(e.srv.URL+"/t/acme/tokens"),
		onPage(`form[action="/t/acme/tokens"] select[name=expires]`, exact("/t/acme/tokens")),
		shot(dir, "12-tokens.png"))

	// A viewer reads the same provider page without a single form to change it.
	step("sign out",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		onPage(`form[action="/login"] input[name=email]`, exact("/login")))
	step("sign in as a viewer and open the provider",
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "viewer@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), testPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		onPage(`#overview-live`, exact("/t/acme")),
		chromedp.Navigate(e.srv.URL+"/t/acme/providers/crm"),
		onPage(`#endpoint-url`, exact("/t/acme/providers/crm")),
		shot(dir, "13-viewer-provider.png"))
	if n := count(ctx, t, `//button[contains(., "Rotate")] | //form[contains(@action, "/rotate")] | //nav//a[contains(@href, "/members")]`); n != 0 {
		t.Fatalf("the viewer is shown %d rotate buttons, forms or members links", n)
	}
	if n := count(ctx, t, `//table[contains(@class, "scopes")]//td`); n == 0 {
		t.Fatal("the viewer does not see the provider's scopes")
	}
}
