package web_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
)

// TestBrowserInspectorAndReplays opens a delivery in the inspector,
// replays it with its button, then counts and starts a bulk replay and
// watches its page follow the job to the end.
//
// Like the other browser test it is not parallel, so Chromium has the
// machine's cores to itself.
func TestBrowserInspectorAndReplays(t *testing.T) {
	e2e.Require(t, "Chromium") // before setup makes a database
	e := setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.member("ops@example.com", false, domain.RoleOperator, "acme")
	e.rejectedHistory(12)
	e.post("/webhooks/acme/crm", nil, nil) // refused: no signature
	e.flushRefusals()
	id := e.signedWithHeaders("m-inspect", snapshotBody("c-7", 3, `{"job_title":"Director","company":"Acme"}`),
		map[string]string{"Authorization": "Bearer sk_live_0123456789abcdef", "User-Agent": "Provider-Hookshot/2.1"})
	e.worker("browser")

	step := stepper(ctx, t)
	step("sign in",
		signIn(e.srv.URL+"/login?next=/t/acme/deliveries/"+id, "ops@example.com"),
		onPage(`form.replay-form`, exact("/t/acme/deliveries/"+id)),
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
		onPage(`a.replay-of`, regexp.MustCompile(`^/t/acme/deliveries/[0-9a-f-]{36}$`)),
		onPage(`.flash.flash-ok`, regexp.MustCompile(`^/t/acme/deliveries/`)),
		shot(dir, "12-replayed.png"))

	step("count what a filter matches",
		chromedp.Navigate(e.srv.URL+"/t/acme/replays?estimate=1&provider=crm&outcome=rejected"),
		onPage(`form.replay-confirm button`, exact("/t/acme/replays")),
		shot(dir, "13-replays-estimate.png"))
	step("start the job and follow it to the end",
		chromedp.Click(chromedp.CSS(`form.replay-confirm button`)),
		onPage(`#replay-progress`, regexp.MustCompile(`^/t/acme/replays/[0-9]+$`)),
		onPage(`#replay-progress.job-done`, regexp.MustCompile(`^/t/acme/replays/[0-9]+$`)),
		shot(dir, "14-replay-job.png"))
	step("see the job in the list",
		chromedp.Navigate(e.srv.URL+"/t/acme/replays"),
		onPage(`table.replay-jobs`, exact("/t/acme/replays")),
		shot(dir, "15-replays.png"))
	applied, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`table.replay-jobs tbody tr td:nth-child(5)`)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(applied) != "12 applied" {
		t.Fatalf("the job's result %q, want 12 applied", applied)
	}
}
