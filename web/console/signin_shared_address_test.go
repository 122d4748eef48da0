package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestLoginFloodSparesOtherAccounts: one person behind a shared address
// (a company's NAT or VPN) sends 40 wrong passwords for one account. That
// account is throttled, and told so (429 naming the account), but another
// account's correct password from the same address still signs in: the
// failures spend the account's budget at the address, not the address's.
// The budget per address alone answered it 429 after 10 failures.
func TestLoginFloodSparesOtherAccounts(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Member("victim@example.com", false, domain.RoleOwner, "acme")
	e.Member("ops@example.com", false, domain.RoleOwner, "acme")
	attacker := e.Anonymous()
	statuses := map[int]int{}
	for range 40 {
		status, _, _ := attacker.Post("/login", url.Values{"email": {"victim@example.com"}, "password": {"wrong"}})
		statuses[status]++
	}
	if statuses[http.StatusTooManyRequests] == 0 {
		t.Fatalf("40 wrong passwords for one account were answered %v, want 429s past its budget", statuses)
	}
	floodEnd := time.Now()

	// Another account signs in from the same address, during the flood.
	b := e.Anonymous()
	if ok, msg := b.SignIn("ops@example.com", webtest.TestPassword); !ok {
		t.Fatalf("another account's correct password from the flooded address: %q", msg)
	}
	if !b.SignedIn("/t/acme") {
		t.Fatal("the session of the other account does not open its workspace")
	}
	// The account under attack is refused, and told it is the account's
	// throttle: 429 by the node's budget; once that budget has refilled a
	// slot (30 s, on a loaded machine), by PostgreSQL's throttle, whose
	// form is answered 200 (docs/contract/console.md, sign-in).
	status, doc, _ := e.Anonymous().Post("/login", url.Values{"email": {"victim@example.com"}, "password": {webtest.TestPassword}})
	refusedBy := http.StatusTooManyRequests
	if time.Since(floodEnd) >= 30*time.Second {
		refusedBy = http.StatusOK
	}
	if msg := webtest.Text(doc, "[role=alert]"); (status != http.StatusTooManyRequests && status != refusedBy) || !strings.Contains(msg, "for this account") {
		t.Fatalf("the attacked account's correct password: %d %q, want 429 naming the account", status, msg)
	}
	// A wrong password for the other account is checked, not refused.
	_, doc, _ = e.Anonymous().Post("/login", url.Values{"email": {"ops@example.com"}, "password": {"wrong"}})
	if msg := webtest.Text(doc, "[role=alert]"); !strings.Contains(msg, "Wrong email or password") {
		t.Fatalf("a wrong password for another account: %q", msg)
	}
}

// busyAccess refuses every sign-in as PostgreSQL's access service does
// when every place to check a password is taken.
type busyAccess struct{ web.Store }

func (busyAccess) Authenticate(context.Context, string, string, string) (domain.User, error) {
	return domain.User{}, domain.ErrSignInBusy
}

// TestLoginBusy: a sign-in that found no place to check its password is
// answered 503 with Retry-After and the form saying to retry.
func TestLoginBusy(t *testing.T) {
	t.Parallel()
	e := webtest.SetupConfig(t, postgres.DefaultReadTimeout, webtest.QuietLog(), func(c *web.Config) { c.Store = busyAccess{c.Store} })
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/login",
		strings.NewReader(url.Values{"email": {"ops@example.com"}, "password": {"secret"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.Srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, body := e.Within(10*time.Second, req)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" ||
		!strings.Contains(string(body), "Wait a few seconds") {
		t.Fatalf("busy sign-in: %d, Retry-After %q, body %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}
