package console_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestBrowserAuditAndOperators signs in as an admin with a real browser,
// disables an operator on the operators page and reads the audit logs of
// a tenant and of every tenant, leaving screenshots of the three pages.
// Not parallel, like the other browser test.
func TestBrowserAuditAndOperators(t *testing.T) {
	e2e.Require(t, "Chromium") // before setup makes a database
	e := webtest.Setup(t)
	ctx := newBrowser(t)
	dir := screenshotDir(t)
	e.Provider("globex", "billing")
	for _, email := range []string{"root@example.com", "ann@example.com"} {
		if err := e.Store.CreateUser(webtest.CliContext(), email, webtest.TestPassword, email == "root@example.com", "acme", domain.RoleOwner); err != nil {
			t.Fatal(err)
		}
	}
	// Some history: a conflict resolved by Ann, an edit by a token, a rotation.
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director"}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-1", 12, `{"job_title":"VP Sales"}`))
	ann := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorOperator, Name: "ann@example.com", Address: "203.0.113.24"})
	bot := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorToken, Name: "terraform", Address: "198.51.100.7"})
	acme := e.Tenant("acme").ID
	p, err := e.Store.ProviderSummary(ann, acme, "crm")
	if err != nil {
		t.Fatal(err)
	}
	open, _, err := e.Store.Conflicts(ann, acme, domain.ConflictOpen, domain.Page{})
	if err != nil || len(open) != 1 {
		t.Fatalf("open conflicts %v, %v", open, err)
	}
	if _, err := e.Store.ResolveConflict(ann, acme, open[0].ID, domain.ResolveKeep, "Confirmed with the account owner", "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	sc := domain.DefaultScope(domain.ScopeName{ObjectType: "contact", Action: "snapshot"})
	sc.TTL = 30 * 24 * time.Hour
	if err := e.Store.SaveProviderScope(bot, acme, p.ID, sc); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.RotateProviderSecret(ann, acme, p.ID, "whsec_cm90YXRlZC1zZWNyZXQ="); err != nil {
		t.Fatal(err)
	}

	step := stepper(ctx, t)
	step("sign in as the admin",
		webtest.SignIn(e.Srv.URL+"/login?next=/admin/users", "root@example.com"),
		webtest.OnPage(`table.operators`, webtest.Exact("/admin/users")))
	annID := e.OperatorID("ann@example.com")
	disable := `form[action="/admin/users/` + itoa(annID) + `/disable"] button`
	step("disable Ann",
		// The confirmation dialog is the browser's; accept it.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(window.confirm = () => true, true)`)(ctx, tg)
			return err
		}),
		chromedp.Click(chromedp.CSS(disable)),
		webtest.OnPage(`.flash.flash-ok`, webtest.Exact("/admin/users")),
		webtest.OnPage(`#operator-`+itoa(annID)+` .badge.operator-disabled`, webtest.Exact("/admin/users")),
		shot(dir, "11-operators.png"))
	step("read the workspace's audit log",
		chromedp.Navigate(e.Srv.URL+"/t/acme/audit"),
		webtest.OnPage(`form.audit-filters`, webtest.Exact("/t/acme/audit")),
		webtest.OnPage(`table.audit`, webtest.Exact("/t/acme/audit")),
		shot(dir, "12-audit.png"))
	// The set-up's provider and two memberships, and the three changes above.
	if n := webtest.Count(ctx, t, `table.audit tbody tr`); n != 6 {
		t.Fatalf("the workspace's log shows %d entries, want 6", n)
	}
	step("read every workspace's audit log",
		chromedp.Navigate(e.Srv.URL+"/admin/audit"),
		webtest.OnPage(`table.audit td.audit-tenant`, webtest.Exact("/admin/audit")),
		shot(dir, "13-admin-audit.png"))
	if n := webtest.Count(ctx, t, `//table[contains(@class, "audit")]//span[contains(@class, "audit-action")][@title="operator_disable"][normalize-space()="disabled an operator"]`); n != 1 {
		t.Fatalf("the disabling shows %d times in every workspace's log, want 1", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
