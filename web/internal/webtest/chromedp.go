package webtest

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// OnPage waits until the browser shows the page a step was meant to reach:
// unique is a CSS selector that only that page has (never the page the
// step started from, or the wait could succeed before the navigation), and
// path must match the location's whole path. A failed check says which
// page the browser is on instead.
func OnPage(unique string, path *regexp.Regexp) chromedp.Action[chromedp.Void] {
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

// Exact matches exactly one path.
func Exact(path string) *regexp.Regexp { return regexp.MustCompile("^" + regexp.QuoteMeta(path) + "$") }

// Count returns how many elements match an XPath or CSS search right now.
func Count(ctx context.Context, t *testing.T, search string) int {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.Search(search), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatalf("count %s: %v", search, err)
	}
	return len(nodes)
}

// SignIn opens the login page at loginURL (which may carry ?next=) and
// signs in as email with testPassword; the step goes on to wait for the
// page it lands on.
func SignIn(loginURL, email string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, a := range []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(loginURL),
			OnPage(`form[action="/login"] input[name=email]`, Exact("/login")),
			chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), TestPassword),
			chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		} {
			if _, err := a(ctx, tg); err != nil {
				return err
			}
		}
		return nil
	})
}
