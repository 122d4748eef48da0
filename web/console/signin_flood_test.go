package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/console"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestSignInFloodAnsweredInMemory: sign-ins with made-up emails from one
// address: past the address's in-memory budget (SignInAddressBurst) they
// are answered 429 with Retry-After before any database work (no throttle
// slot taken, no attempt counted), and the audit log gains a handful of
// rows. The budget is the address's: an operator signs in from another
// address.
func TestSignInFloodAnsweredInMemory(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Operator("ops@example.com", false, "acme") // signs in from 127.0.0.1 first
	ctx := context.Background()
	// The address has used its checks over all accounts in PostgreSQL, as
	// that many made-up emails, each checked against a hash, would have:
	// an attempt that reaches the database is refused there, with no hash.
	e.Exec(fmt.Sprintf(`INSERT INTO login_throttle (email, address_key, checks) VALUES ('', '127.0.0.1', array_fill(now(), ARRAY[%d]))
		ON CONFLICT (email, address_key) DO UPDATE SET checks = excluded.checks`, domain.MaxLoginChecksAddress))
	post := func(email, password string) (int, int) {
		return postFrom(t, http.DefaultClient, e.Srv.URL, email, password)
	}
	const n = console.SignInAddressBurst + 100
	limited := 0
	for i := range n {
		status, wait := post(fmt.Sprintf("%s%d@nowhere.example", strings.Repeat("x", 200), i), "wrong password")
		switch {
		case status == http.StatusTooManyRequests && wait >= 1:
			limited++
		case status == http.StatusTooManyRequests:
			t.Fatalf("attempt %d answered 429 without Retry-After", i+1)
		case limited > 0:
			t.Fatalf("attempt %d answered %d after earlier ones were limited", i+1, status)
		}
	}
	var checks, counted, audited int
	err := e.Store.Pool().QueryRow(ctx, `SELECT
		(SELECT coalesce(sum(cardinality(checks)), 0) FROM login_throttle WHERE email = ''),
		(SELECT coalesce(sum(attempts), 0) FROM sign_in_refusals),
		(SELECT count(*) FROM audit_log WHERE action = 'sign_in' AND summary <> 'succeeded')`).Scan(&checks, &counted, &audited)
	if err != nil {
		t.Fatal(err)
	}
	if limited < 90 || checks != domain.MaxLoginChecksAddress || counted > n-limited || audited > 3 {
		t.Fatalf("%d made-up sign-ins: %d answered 429; %d throttle slots, %d attempts counted, %d audit rows",
			n, limited, checks, counted, audited)
	}
	if status, _ := post("ops@example.com", webtest.TestPassword); status != http.StatusTooManyRequests {
		t.Fatalf("the flooding address answered %d, want 429 while its budget refills", status)
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	elsewhere := &http.Client{Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if status, _ := postFrom(t, elsewhere, e.Srv.URL, "ops@example.com", webtest.TestPassword); status != http.StatusSeeOther {
		t.Fatalf("sign-in from another address answered %d, want 303", status)
	}
}

// postFrom posts a sign-in with c and answers the status and Retry-After.
func postFrom(t *testing.T, c *http.Client, base, email, password string) (status, wait int) {
	t.Helper()
	resp, err := c.PostForm(base+"/login", url.Values{"email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wait, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, wait
}
