package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// overflowJS lists what makes a page wider than its window: the page's own
// sideways scroll, and each element reaching past the window's right edge
// that no scrolling or clipping box holds.
const overflowJS = `(() => {
  const W = document.documentElement.clientWidth, bad = [];
  if (document.documentElement.scrollWidth > W) bad.push("the page is " + document.documentElement.scrollWidth + " px wide");
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= W + 1) continue;
    let p = el.parentElement, held = false;
    for (; p && p !== document.body; p = p.parentElement) if (getComputedStyle(p).overflowX !== "visible") { held = true; break; }
    if (held) continue;
    bad.push(el.tagName.toLowerCase() + (typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "") + " reaches " + Math.round(r.right) + " px");
    if (bad.length >= 8) break;
  }
  return bad;
})()`

// clippedJS lists the table cells (and the cells of tables stacked as
// cards) that cut their text: a cell, or an element inside it, whose
// content is wider than its box, with no title tooltip on it or around
// it to show the whole text. A box that scrolls is not clipped.
const clippedJS = `(() => {
  const bad = [];
  const titled = (el, cell) => { for (let p = el; p; p = p.parentElement) { if (p.hasAttribute("title")) return true; if (p === cell) break; } return false; };
  for (const cell of document.querySelectorAll("td, th")) {
    if (cell.getClientRects().length === 0) continue;
    for (const el of [cell, ...cell.querySelectorAll("*")]) {
      if (el.clientWidth === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
      const o = getComputedStyle(el).overflowX;
      if (o === "auto" || o === "scroll") continue;
      if (titled(el, cell)) continue;
      // The clipped child may carry the tooltip itself.
      const r = el.getBoundingClientRect();
      if ([...el.querySelectorAll("[title]")].some(c => c.getBoundingClientRect().right > r.right + 1)) continue;
      bad.push(cell.tagName.toLowerCase() + " " + JSON.stringify(cell.innerText.trim().replace(/\s+/g, " ").slice(0, 80)) + " (" + el.scrollWidth + " px in " + el.clientWidth + ")");
      break;
    }
    if (bad.length >= 8) break;
  }
  return bad;
})()`

// hiddenColumnsJS lists the tables that scroll sideways inside their
// box, hiding columns past its edge: a wide window fits them, and a
// phone stacks every list as cards.
const hiddenColumnsJS = `(() => {
  const bad = [];
  for (const t of document.querySelectorAll("table")) {
    if (t.getClientRects().length === 0) continue;
    const box = t.parentElement && getComputedStyle(t).display !== "block" ? t.parentElement : t;
    if (box.scrollWidth <= box.clientWidth + 1) continue;
    const r = box.getBoundingClientRect(), hidden = [];
    for (const th of t.querySelectorAll("thead th")) if (th.getBoundingClientRect().right > r.right + 1) hidden.push(th.innerText.trim());
    bad.push("table" + (t.className ? "." + t.className.trim().split(/\s+/).join(".") : "") + " scrolls sideways" + (hidden.length ? ", hiding " + hidden.join(", ") : ""));
  }
  return bad;
})()`

// navJS lists what of the navigation does not fit: a label on more than
// one line, a link or the sign-out button outside the window, or a
// sidebar that scrolls sideways.
const navJS = `(() => {
  const bad = [], W = document.documentElement.clientWidth;
  for (const el of document.querySelectorAll("nav.sections a, .switcher summary strong, .account a, .account button")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (el.getClientRects().length > 1 || r.height > 36) bad.push(el.textContent.trim() + " wraps (" + Math.round(r.height) + " px high)");
    if (r.left < 0 || r.right > W) bad.push(el.textContent.trim() + " is outside the window");
  }
  const s = document.querySelector("header.sidebar");
  if (s && s.scrollWidth > s.clientWidth) bad.push("the sidebar scrolls sideways");
  return bad;
})()`

// TestBrowserConsoleFitsEveryWidth opens every main page of a workspace
// and of the admin area at a laptop's 1280 px and a phone's 390 px (and,
// for make screenshots, at 1440 and 1920 px): no page scrolls sideways,
// no element is wider than the window, the navigation's labels stay on
// one line and Sign out stays in view; on the phone the navigation folds
// behind a Menu button that opens it. Not parallel, like the other
// browser tests.
func TestBrowserConsoleFitsEveryWidth(t *testing.T) {
	e2e.Require(t, "Chromium")
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	e.Provider("globex", "crm")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 10, `{"firstname":"Ada","lastname":"Lovelace","job_title":"Analyst","company":"Acme"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"firstname":"Ada","lastname":"Lovelace","job_title":"Director","company":"Acme"}`))
	e.Deliver1("m3", webtest.SnapshotBody("c-1", 11, `{"firstname":"Ada","lastname":"Lovelace","job_title":"Manager"}`))
	e.Deliver1("m4", webtest.SnapshotBody("c-1", 12, `{"firstname":"Ada","lastname":"Lovelace","job_title":"VP Sales, Europe, Middle East and Africa","company":"Acme"}`))
	_, answer := e.Deliver1("a-very-long-event-id-from-a-provider-that-likes-long-ids-0123456789abcdef",
		webtest.SnapshotBody("c-2-with-a-rather-long-identifier-from-the-crm-0123456789", 3, `{"job_title":"CTO"}`))
	delivery, _ := answer["delivery_id"].(string)
	if delivery == "" {
		t.Fatalf("no delivery id in %v", answer)
	}
	// Records with several marks each (c-1: an open conflict and a stale
	// event), in the directory.
	e.Deliver1("m5", webtest.SnapshotBody("c-1", 9, `{"firstname":"Ada","lastname":"Lovelace"}`))
	if _, err := e.Store.IndexSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A replay job that re-ran the stale deliveries: its page lists them.
	webtest.Worker(e, "layout")
	if status, body := webtest.StartReplay(e, e.Token("acme"), `{"provider": "crm", "outcome": "stale"}`); status != http.StatusAccepted && status != http.StatusCreated {
		t.Fatalf("starting a replay answered %d %v", status, body)
	}
	webtest.WaitJob(e, 1, "done", func(j domain.ReplayJob) bool { return !j.Active() })
	// Two alerts fire: every page of the workspace has the banner.
	webtest.FireAlert(e, "acme", alerting.ProviderSilent, "crm",
		"crm has sent no authenticated delivery for 6h.", time.Now().Add(-time.Hour), nil)
	webtest.FireAlert(e, "acme", alerting.DestinationFailing, "",
		"Destination 1 (https://hooks.example.com/a-rather-long-path/tidemark) has had no 2xx answer for 15m.", time.Now(), nil)
	// A HubSpot provider with API credentials: its page has their section
	// and, for owners, its form.
	hub, err := e.Store.ConnectProvider(webtest.CliContext(), e.Tenant("acme").ID, "hub", "hubspot", "hubspot-client-secret-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAPICredentials(webtest.CliContext(), hub.TenantID, hub.ID,
		pull.Credentials{Token: "pat-na1-layout", BaseURL: "https://api.hubapi.example.com/a-rather-long-path-for-a-sandbox", BudgetShare: 0.5}); err != nil {
		t.Fatal(err)
	}
	// A Salesforce provider subscribed by Change Data Capture, with a long
	// last error: its page has the section and, for owners, its switch.
	addCDC(t, e)
	// Its backfills: a failed job with a long reason, and a running sweep
	// with its Cancel button.
	addBackfills(t, e)
	// A HubSpot app with a long name: the Providers page offers owners its
	// Connect form.
	app, err := e.Store.CreateApp(webtest.CliContext(), domain.NewApp{Kind: domain.AppKindHubSpot,
		Name: "revops-hubspot-production-app", ProviderAppID: 4242, ClientID: "client-id-layout",
		ClientSecret: "client-secret-layout", Scopes: []string{"crm.objects.contacts.read", "oauth"}})
	if err != nil {
		t.Fatal(err)
	}
	// Its admin page: an install that needs reconnecting (a banner on the
	// hub provider's page too) and an unrouted portal with a long sample.
	install, err := e.Store.InstallByOAuth(webtest.CliContext(), domain.AppOAuthInstall{AppID: app.ID, TenantID: hub.TenantID,
		PortalID: 62515, ProviderName: "hub", Tokens: domain.AppTokens{AccessToken: "a", RefreshToken: "r", Expiry: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.MarkNeedsReconnect(webtest.CliContext(), hub.TenantID, install.ID, "refused"); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.CountUnrouted(webtest.CliContext(), app.ID, time.Now(), []domain.UnroutedPortal{{PortalID: 99887766, N: 12,
		Sample: []byte(`[{"portalId":99887766,"objectId":123456789,"propertyName":"a_rather_long_custom_property_name_from_a_portal","propertyValue":"` +
			strings.Repeat("x", 120) + `"}]`)}}); err != nil {
		t.Fatal(err)
	}

	pages := []struct{ name, path string }{
		{"overview", "/t/acme"},
		{"events", "/t/acme/events"},
		{"event", "/t/acme/events/" + delivery + "/0"},
		{"records", "/t/acme/records"},
		{"timeline", "/t/acme/contacts/crm/c-1"},
		{"people", "/t/acme/people"},
		{"conflicts", "/t/acme/conflicts"},
		{"conflict", "/t/acme/conflicts/1"},
		{"deliveries", "/t/acme/deliveries"},
		{"delivery", "/t/acme/deliveries/" + delivery},
		{"replays", "/t/acme/replays"},
		{"replay", "/t/acme/replays/1"},
		{"providers", "/t/acme/providers"},
		{"alerts", "/t/acme/alerts"},
		{"provider", "/t/acme/providers/crm"},
		{"provider-api", "/t/acme/providers/hub"},
		{"provider-cdc", "/t/acme/providers/sf"},
		{"destinations", "/t/acme/destinations"},
		{"tokens", "/t/acme/tokens"},
		{"members", "/t/acme/members"},
		{"audit", "/t/acme/audit"},
		{"admin", "/admin"},
		{"operators", "/admin/users"},
		{"reconciliation", "/admin/reconciliation"},
		{"admin-audit", "/admin/audit"},
		{"admin-apps", "/admin/apps"},
		{"admin-app", "/admin/apps/revops-hubspot-production-app"},
		{"workspaces", "/"},
		{"not-found", "/t/acme/nothing"},
	}
	root := e.Operator("root@example.com", true, "acme")
	for _, p := range pages {
		want := http.StatusOK
		if p.name == "not-found" {
			want = http.StatusNotFound
		}
		if status, _ := root.Get(p.path); status != want {
			t.Fatalf("%s answered %d, want %d", p.path, status, want)
		}
	}

	widths := []int{1280, 390}
	dir := os.Getenv("TIDEMARK_SCREENSHOTS")
	if dir != "" { // make screenshots: every page at the widths people use
		widths = []int{1440, 1280, 1920, 390}
		dir = screenshotDir(t)
	}
	step := stepper(ctx, t)
	step("sign in", webtest.SignIn(e.Srv.URL+"/login", "root@example.com"),
		webtest.OnPage(`form[action="/logout"]`, webtest.Exact("/")))
	for _, w := range widths {
		for _, p := range pages {
			what := fmt.Sprintf("%s (%s) at %d px", p.name, p.path, w)
			actions := []chromedp.Action[chromedp.Void]{
				chromedp.EmulateViewport(int64(w), 900),
				chromedp.Navigate(e.Srv.URL + p.path),
				chromedp.WaitVisible(chromedp.CSS(`main h1`)),
			}
			if dir != "" {
				actions = append(actions, shot(dir, fmt.Sprintf("layout-%d-%s.png", w, p.name)))
			}
			step(what, actions...)
			if strings.HasPrefix(p.path, "/t/acme") && visibleCount(ctx, t, `.content > .alerts-banner a[href="/t/acme/alerts"]`) != 1 {
				t.Errorf("%s shows no banner of the firing alerts", what)
			}
			for _, check := range []struct{ js, fails string }{{overflowJS, "does not fit"}, {navJS, "does not fit"},
				{clippedJS, "clips cells"}, {hiddenColumnsJS, "hides columns"}} {
				bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](check.js))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if len(bad) > 0 {
					t.Errorf("%s %s: %s", what, check.fails, strings.Join(bad, "; "))
				}
			}
		}
	}

	// On a phone the navigation waits behind the Menu button.
	step("a phone's workspace page", chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(e.Srv.URL+"/t/acme/events"), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	if n := visibleCount(ctx, t, `nav.sections a`); n != 0 {
		t.Errorf("the phone shows %d nav links before Menu is pressed", n)
	}
	step("open the menu", chromedp.Click(chromedp.CSS(`label.nav-toggle-label`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.sections a[href="/t/acme/events"]`)))
	if dir != "" {
		step("the open menu's screenshot", windowShot(dir, "layout-390-menu-open.png"))
	}
	if n := visibleCount(ctx, t, `nav.sections a`); n != 13 {
		t.Errorf("the open menu shows %d nav links, want 13", n)
	}
	for _, check := range []string{overflowJS, navJS} {
		if bad, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](check)); err != nil || len(bad) > 0 {
			t.Errorf("the open menu does not fit: %v %s", err, strings.Join(bad, "; "))
		}
	}
}

// visibleCount is how many elements matching css the window renders.
func visibleCount(ctx context.Context, t *testing.T, css string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(
		`[...document.querySelectorAll(%q)].filter(e => e.getClientRects().length > 0).length`, css)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// addBackfills gives acme/hub a failed backfill and a failed sweep with
// long reasons, and a running sweep.
func addBackfills(t *testing.T, e *webtest.Env) {
	t.Helper()
	ctx := webtest.CliContext()
	tenant := e.Tenant("acme").ID
	p, err := e.Store.ProviderSummary(ctx, tenant, "hub")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	failed, err := e.Store.StartBackfill(ctx, tenant, p.ID, now.Add(-72*time.Hour), now, "contact", false)
	if err != nil {
		t.Fatal(err)
	}
	// A tenant runs one job at a time: the failed one, then the sweep.
	if _, ok, err := e.Store.ClaimBackfill(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := e.Store.FinishBackfill(ctx, tenant, failed.ID, pull.Progress{Deliveries: 3, Events: 240, Missed: 12}, pull.Failed,
		"crm has no API credentials: set them with tidemark provider update --tenant acme --provider crm --api-token-stdin"); err != nil {
		t.Fatal(err)
	}
	// A failed sweep: the overview's Last sweep column says so.
	sweep, err := e.Store.StartBackfill(ctx, tenant, p.ID, now.Add(-40*time.Minute), now.Add(-20*time.Minute), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Store.ClaimBackfill(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := e.Store.FinishBackfill(ctx, tenant, sweep.ID, pull.Progress{}, pull.Failed,
		"invalid: provider hub has no scopes yet, so there is no object type to pull: scopes are created by the first delivery of each type"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.StartBackfill(ctx, tenant, p.ID, now.Add(-20*time.Minute), now, "", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Store.ClaimBackfill(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
}

// addCDC connects acme's Salesforce provider sf with a connected app and
// its Change Data Capture on, held by a node, with a long last error.
func addCDC(t *testing.T, e *webtest.Env) {
	t.Helper()
	ctx := webtest.CliContext()
	sf, err := e.Store.ConnectProvider(ctx, e.Tenant("acme").ID, "sf", "salesforce", "", map[string]string{"org_id": "00D5e000000AbCdEAK"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.SetAPICredentials(ctx, sf.TenantID, sf.ID, pull.Credentials{ClientID: "3MVG9layout",
		ClientSecret: "client-secret-layout", LoginURL: "https://a-rather-long-my-domain-name-for-layout.my.salesforce.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.SetCDC(ctx, sf.TenantID, sf.ID, domain.CDCConfig{Enabled: true, Channel: "/data/A_rather_long_custom_channel_name__chn"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Store.LeaseCDC(ctx, sf.TenantID, sf.ID, "node-0f8c2f1e-6b1d-4d0e-9b9a-2f6c1d7e8a90", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.RecordCDCError(ctx, sf.TenantID, sf.ID, "rpc error: code = InvalidArgument desc = "+
		"sfdc.platform.eventbus.grpc.subscription.fetch.replayid.corrupted: the replay id is no longer valid"); err != nil {
		t.Fatal(err)
	}
}
