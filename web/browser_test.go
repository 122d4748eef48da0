package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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

// newBrowser starts headless Chromium (Debian's package). With CI=true a
// missing browser fails the test instead of skipping it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (apt-get install chromium)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1366, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
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

// count returns how many elements match an XPath or CSS search right now.
func count(ctx context.Context, t *testing.T, search string) int {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.Search(search), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatalf("count %s: %v", search, err)
	}
	return len(nodes)
}

// TestBrowserOperatorJourney signs in with a real browser, opens the
// overview, resolves a conflict and sees the queue shrink, and rotates a
// provider's secret.
func TestBrowserOperatorJourney(t *testing.T) {
	e := setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	if err := e.store.CreateUser(context.Background(), "ops@example.com", testPassword, false, "acme"); err != nil {
		t.Fatal(err)
	}
	// History: applied, stale, duplicate, and two revision conflicts.
	e.deliver1("m1", snapshotBody("c-1", 10, `{"job_title":"Analyst","company":"Acme"}`))
	e.deliver1("m2", snapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.deliver1("m3", snapshotBody("c-1", 11, `{"job_title":"Manager","company":"Acme"}`))
	e.deliver1("m2", snapshotBody("c-1", 12, `{"job_title":"Director","company":"Acme"}`))
	e.deliver1("m4", snapshotBody("c-1", 12, `{"job_title":"VP Sales","company":"Acme"}`))
	e.deliver1("m5", snapshotBody("c-2", 3, `{"job_title":"CTO"}`))
	e.deliver1("m6", snapshotBody("c-2", 3, `{"job_title":"CEO"}`))

	openBadges := `//table//span[contains(concat(" ", normalize-space(@class), " "), " open ")]`
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("sign in and open the overview",
		chromedp.Navigate(e.srv.URL+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "ops@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), testPassword),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		shot(dir, "1-overview.png"))

	step("open the conflict queue",
		chromedp.Navigate(e.srv.URL+"/t/acme/conflicts"),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		shot(dir, "2-conflicts.png"))
	openBefore := count(ctx, t, openBadges)
	step("keep the accepted snapshot of one conflict",
		chromedp.Click(chromedp.Search(`//table//a[contains(@href, "/conflicts/")]`)),
		chromedp.WaitVisible(chromedp.CSS(`textarea[name=note]`)),
		shot(dir, "3-conflict.png"),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=note]`), "Director is confirmed by the account owner"),
		chromedp.Click(chromedp.CSS(`button[name=resolution][value=keep]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
		shot(dir, "4-after-keep.png"))
	openAfter := count(ctx, t, openBadges)

	step("look at the event history and a contact timeline",
		chromedp.Navigate(e.srv.URL+"/t/acme/events"),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		shot(dir, "7-events.png"),
		chromedp.Navigate(e.srv.URL+"/t/acme/contacts/crm/c-1"),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		shot(dir, "8-timeline.png"))

	step("open the provider",
		chromedp.Navigate(e.srv.URL+"/t/acme/providers/crm"),
		chromedp.WaitVisible(chromedp.CSS(`main h1`)),
		shot(dir, "5-provider.png"))
	step("rotate its secret",
		chromedp.Click(chromedp.Search(`//form[contains(@action, "/rotate")]//button`)),
		chromedp.WaitVisible(chromedp.CSS(`.secret`)),
		shot(dir, "6-rotated.png"))
	secret, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.secret`)))
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
}
