package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserPollingIsMarked: in a real browser, the overview's background
// refresh carries the header that keeps it from extending an idle session,
// and a click does not.
//
// It is not parallel, like the other browser test.
func TestBrowserPollingIsMarked(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := webtest.Setup(t)
	e.Member("ops@example.com", false, domain.RoleViewer, "acme")
	var (
		mu    sync.Mutex
		polls int // htmx requests marked as polling
		other int // htmx requests not marked
	)
	console := e.Srv.Config.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("HX-Request") == "true" {
			mu.Lock()
			if r.Header.Get("X-Tidemark-Poll") == "1" {
				polls++
			} else {
				other++
			}
			mu.Unlock()
		}
		console.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	ctx := newBrowser(t)
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(sctx,
		chromedp.Navigate(srv.URL+"/login"),
		webtest.OnPage(`form[action="/login"] input[name=email]`, webtest.Exact("/login")),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "ops@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), webtest.TestPassword),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)),
		webtest.OnPage(`#overview-live`, webtest.Exact("/t/acme")),
		chromedp.Sleep(12*time.Second), // the overview refreshes every 10 s
	)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if polls == 0 || other != 0 {
		t.Fatalf("after 12 s on the overview: %d refreshes marked as polling, %d unmarked; want at least one, and none unmarked", polls, other)
	}
}
