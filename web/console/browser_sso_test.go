package console_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserSSO signs in end to end in a real browser against a real
// OpenID provider: the sign-in page, at a laptop's and a phone's width,
// offers "Sign in with Acme SSO"; the provider's form signs the person in
// and the console opens with the workspaces their groups give. With
// TIDEMARK_SCREENSHOTS set, the sign-in page is saved at both widths. Not
// parallel, like the other browser tests.
func TestBrowserSSO(t *testing.T) {
	e2e.Require(t, "Chromium")
	s := newSSOEnv(t)
	s.person("ada", "eng", "finance")
	ctx := newBrowser(t)
	step := stepper(ctx, t)
	dir := ""
	if os.Getenv("TIDEMARK_SCREENSHOTS") != "" {
		dir = screenshotDir(t)
	}
	for _, w := range []int{1280, 390} {
		actions := []chromedp.Action[chromedp.Void]{chromedp.EmulateViewport(int64(w), 900),
			chromedp.Navigate(s.Srv.URL + "/login"), chromedp.WaitVisible(chromedp.CSS(`#sso-sign-in`))}
		if dir != "" {
			actions = append(actions, shot(dir, fmt.Sprintf("sso-login-%d.png", w)))
		}
		step(fmt.Sprintf("the sign-in page at %d px", w), actions...)
		bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](overflowJS))
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 {
			t.Errorf("the sign-in page at %d px does not fit: %s", w, strings.Join(bad, "; "))
		}
	}
	button, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#sso-sign-in`)))
	if err != nil || button != "Sign in with Acme SSO" {
		t.Errorf("the button says %q (%v)", button, err)
	}
	step("sign in at the provider", chromedp.EmulateViewport(1280, 900),
		chromedp.Click(chromedp.CSS(`#sso-sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), "ada"),
		chromedp.SendKeys(chromedp.CSS(`#password`), "idp-password"),
		chromedp.Click(chromedp.CSS(`#submit`)),
		webtest.OnPage(`form[action="/logout"]`, webtest.Exact("/")))
	tiles, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.tiles`)))
	if err != nil || !strings.Contains(tiles, "acme") || !strings.Contains(tiles, "globex") {
		t.Errorf("ada's workspaces: %q (%v), want acme and globex", tiles, err)
	}
	if dir != "" {
		step("the home page's screenshot", shot(dir, "sso-home-1280.png"))
	}
}
