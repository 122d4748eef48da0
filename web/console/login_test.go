package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestLoginAndLogout(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	anon := e.Anonymous()
	if status, _ := anon.Get("/t/acme"); status != http.StatusSeeOther {
		t.Fatalf("signed-out tenant page answered %d, want a redirect to login", status)
	}
	status, doc, _ := anon.Post("/login", url.Values{"email": {"nobody@example.com"}, "password": {"wrong"}})
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, "[role=alert]"), "Wrong email or password") {
		t.Fatalf("bad login: %d %q", status, webtest.Text(doc, "[role=alert]"))
	}

	b := e.Operator("ops@example.com", false, "acme")
	status, doc = b.Get("/t/acme")
	if status != http.StatusOK || !strings.Contains(webtest.Text(doc, ".account"), "ops@example.com") {
		t.Fatalf("overview answered %d, account %q", status, webtest.Text(doc, ".account"))
	}
	if status, _, loc := b.Post("/logout", nil); status != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("logout: %d to %q", status, loc)
	}
	if status, _ := b.Get("/t/acme"); status != http.StatusSeeOther {
		t.Fatalf("after logout the tenant page answered %d", status)
	}
}

func TestLoginThrottling(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Operator("ops@example.com", false, "acme")
	anon := e.Anonymous()
	for range 5 {
		anon.Post("/login", url.Values{"email": {"ops@example.com"}, "password": {"wrong"}})
	}
	_, doc, _ := anon.Post("/login", url.Values{"email": {"ops@example.com"}, "password": {webtest.TestPassword}})
	if msg := webtest.Text(doc, "[role=alert]"); !strings.Contains(msg, "Too many failed sign-ins for this account") {
		t.Fatalf("sixth attempt with the right password: %q, want the throttling message", msg)
	}
}

func TestConsoleSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	resp, err := http.Get(e.Srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
}
