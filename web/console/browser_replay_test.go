package console_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserInspectorAndReplays opens a delivery in the inspector,
// replays it with its button, then counts and starts a bulk replay and
// watches its page follow the job to the end.
//
// Like the other browser test it is not parallel, so Chromium has the
// machine's cores to itself.
func TestBrowserInspectorAndReplays(t *testing.T) {
	e2e.Require(t, "Chromium") // before setup makes a database
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	e.RejectedHistory(12)
	e.Post("/webhooks/acme/crm", nil, nil) // refused: no signature
	e.FlushRefusals()
	id := e.SignedWithHeaders("m-inspect", webtest.SnapshotBody("c-7", 3, `{"job_title":"Director","company":"Acme"}`),
		map[string]string{"Authorization": "Bearer sk_live_0123456789abcdef", "User-Agent": "Provider-Hookshot/2.1"})
	webtest.Worker(e, "browser")

	step := stepper(ctx, t)
	step("sign in",
		webtest.SignIn(e.Srv.URL+"/login?next=/t/acme/deliveries/"+id, "ops@example.com"),
		webtest.OnPage(`form.replay-form`, webtest.Exact("/t/acme/deliveries/"+id)),
		shot(dir, "11-delivery.png"))
	headers, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`table.headers`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(headers, "Bear…") || strings.Contains(headers, "sk_live") {
		t.Fatalf("the headers shown: %q", headers)
	}
	// The confirmation dialog is the browser's own; accept it.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`)); err != nil {
		t.Fatal(err)
	}
	step("replay it",
		chromedp.Click(chromedp.CSS(`form.replay-form button`)),
		webtest.OnPage(`a.replay-of`, regexp.MustCompile(`^/t/acme/deliveries/[0-9a-f-]{36}$`)),
		webtest.OnPage(`.flash.flash-ok`, regexp.MustCompile(`^/t/acme/deliveries/`)),
		shot(dir, "12-replayed.png"))

	step("count what a filter matches",
		chromedp.Navigate(e.Srv.URL+"/t/acme/replays?estimate=1&provider=crm&outcome=rejected"),
		webtest.OnPage(`form.replay-confirm button`, webtest.Exact("/t/acme/replays")),
		shot(dir, "13-replays-estimate.png"))
	step("start the job and follow it to the end",
		chromedp.Click(chromedp.CSS(`form.replay-confirm button`)),
		webtest.OnPage(`#replay-progress`, regexp.MustCompile(`^/t/acme/replays/[0-9]+$`)),
		webtest.OnPage(`#replay-progress.job-done`, regexp.MustCompile(`^/t/acme/replays/[0-9]+$`)),
		shot(dir, "14-replay-job.png"))
	step("see the job in the list",
		chromedp.Navigate(e.Srv.URL+"/t/acme/replays"),
		webtest.OnPage(`table.replay-jobs`, webtest.Exact("/t/acme/replays")),
		shot(dir, "15-replays.png"))
	applied, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`table.replay-jobs tbody tr td:nth-child(5)`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(applied) != "12 applied" {
		t.Fatalf("the job's result %q, want 12 applied", applied)
	}
}
