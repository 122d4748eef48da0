package console_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/netlist"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/console"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestLoginNextStaysOnSite: after sign-in, next may only lead to a path of
// this site. Browsers drop tabs and newlines from a URL and read a
// backslash as a slash, so each of these would have led to evil.example.
func TestLoginNextStaysOnSite(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	b := e.Operator("ops@example.com", false, "acme")
	for _, c := range []struct{ next, want string }{
		{"/%09/evil.example", "/"},
		{"/%0a/evil.example", "/"},
		{"/%0D/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"%2F%2Fevil.example", "/"},
		{"/%2F/evil.example", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"evil.example", "/"},
		{"/%zz", "/"},
		{"", "/"},
		{"/t/acme", "/t/acme"},
		{"/t/acme/conflicts?state=open", "/t/acme/conflicts?state=open"},
		{"/t/acme/events?provider=crm&q=%7B%22job_title%22%3A%22Director%22%7D", "/t/acme/events?provider=crm&q=%7B%22job_title%22%3A%22Director%22%7D"},
	} {
		t.Run(c.next, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/login?next="+url.QueryEscape(c.next), nil)
			resp, err := b.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != c.want {
				t.Fatalf("signed-in /login?next=%q answered %d to %q, want %q", c.next, resp.StatusCode, loc, c.want)
			}
		})
	}
}

// TestConsoleBodyLimit: console posts over 64 KiB are refused with 413
// before they are read, with or without a length.
func TestConsoleBodyLimit(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	big := url.Values{"email": {"ops@example.com"}, "password": {"wrong"}, "pad": {strings.Repeat("x", 64<<10)}}.Encode()
	for _, c := range []struct {
		name    string
		path    string
		chunked bool
	}{
		{"login", "/login", false},
		{"login without a length", "/login", true},
		{"logout", "/logout", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var body = strings.NewReader(big)
			req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+c.path, body)
			if c.chunked {
				req, _ = http.NewRequest(http.MethodPost, e.Srv.URL+c.path, struct{ *strings.Reader }{body})
				req.ContentLength = -1
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("%d KiB form answered %d, want 413", len(big)>>10, resp.StatusCode)
			}
		})
	}
}

// TestLoginInputLimits: an over-long email or password is refused before
// any hash or query: no throttling slot is taken, no audit entry written.
func TestLoginInputLimits(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	anon := e.Anonymous()
	for _, form := range []url.Values{
		{"email": {strings.Repeat("a", 250) + "@example.com"}, "password": {"correct horse battery"}},
		{"email": {"ops@example.com"}, "password": {strings.Repeat("p", 73)}},
	} {
		status, doc, _ := anon.Post("/login", form)
		if msg := webtest.Text(doc, "[role=alert]"); status != http.StatusBadRequest || !strings.Contains(msg, "at most") {
			t.Fatalf("over-long sign-in answered %d %q", status, msg)
		}
	}
	var entries, slots int
	err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM audit_log WHERE action = 'sign_in'), (SELECT count(*) FROM login_throttle)`).Scan(&entries, &slots)
	if err != nil {
		t.Fatal(err)
	}
	if entries != 0 || slots != 0 {
		t.Fatalf("over-long sign-ins left %d audit entries and %d throttle rows, want none", entries, slots)
	}
}

// TestLoginAudited: a sign-in through the console is recorded with the
// email typed and the client's address.
func TestLoginAudited(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Operator("ops@example.com", false, "acme")
	e.Anonymous().Post("/login", url.Values{"email": {"ops@example.com"}, "password": {"wrong"}})
	rows, _ := e.Store.Pool().Query(context.Background(),
		`SELECT actor || ' ' || action || ' ' || summary || ' ' || client_address FROM audit_log WHERE action = 'sign_in' ORDER BY id`)
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	want := "ops@example.com sign_in succeeded 127.0.0.1,ops@example.com sign_in wrong password 127.0.0.1"
	if strings.Join(got, ",") != want {
		t.Fatalf("audit log %q, want %q", got, want)
	}
}

// TestSessionCookie: the cookie is Secure with the __Host- prefix unless
// the console is plain HTTP on a loopback address, which a trusted proxy
// saying X-Forwarded-Proto: https denies (review 3, F12); an https public
// URL adds HSTS.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Operator("ops@example.com", false, "acme")
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}
	for _, c := range []struct {
		name      string
		publicURL string
		local     net.Addr
		tls       bool
		cookie    string
		hsts      bool
		trusted   string // --trusted-proxies; the peer is 192.0.2.1
		proto     string // X-Forwarded-Proto
	}{
		{"plain HTTP on loopback", "", loopback, false, "tidemark_session", false, "", ""},
		{"plain HTTP on another address", "", public, false, "__Host-tidemark_session", false, "", ""},
		{"TLS on loopback", "", loopback, true, "__Host-tidemark_session", false, "", ""},
		{"https public URL, proxied from loopback", "https://console.example.com", loopback, false, "__Host-tidemark_session", true, "", ""},
		{"trusted proxy says https, on loopback", "", loopback, false, "__Host-tidemark_session", false, "192.0.2.0/24", "https"},
		{"trusted proxy says http, on loopback", "", loopback, false, "tidemark_session", false, "192.0.2.0/24", "http"},
		{"untrusted peer says https, on loopback", "", loopback, false, "tidemark_session", false, "10.0.0.0/8", "https"},
		{"no trusted proxies, https said, on loopback", "", loopback, false, "tidemark_session", false, "", "https"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			trusted, err := netlist.Parse(c.trusted)
			if err != nil {
				t.Fatal(err)
			}
			h := web.New(web.Config{Store: e.Store, Sessions: e.Store.SessionStore(),
				Logger: webtest.QuietLog(), PublicURL: c.publicURL, TrustedProxies: trusted}).Handler()
			form := url.Values{"email": {"ops@example.com"}, "password": {webtest.TestPassword}}.Encode()
			req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if c.proto != "" {
				req.Header.Set("X-Forwarded-Proto", c.proto)
			}
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, c.local))
			if c.tls {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			cookies := rec.Result().Cookies()
			if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
				t.Fatalf("sign-in answered %d with cookies %v", rec.Code, cookies)
			}
			ck := cookies[0]
			if ck.Name != c.cookie || ck.Secure != (c.cookie != "tidemark_session") || !ck.HttpOnly || ck.Path != "/" || ck.Domain != "" {
				t.Fatalf("cookie %s, want %s", ck, c.cookie)
			}
			if hsts := rec.Header().Get("Strict-Transport-Security"); (hsts != "") != c.hsts {
				t.Fatalf("Strict-Transport-Security %q, want it: %v", hsts, c.hsts)
			}
		})
	}
}

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// TestSessionIdleAndLifetime: a session ends after an hour without a
// request from the operator, background polling included, and after 12
// hours whatever the activity.
func TestSessionIdleAndLifetime(t *testing.T) {
	t.Parallel()
	base := webtest.Setup(t)
	base.Tenant("acme")
	clk := &clock{now: time.Now()}
	srv := httptest.NewServer(web.New(web.Config{Store: base.Store, Sessions: base.Store.SessionStore(),
		Logger: webtest.QuietLog(), Now: clk.Now}).Handler())
	t.Cleanup(srv.Close)
	e := *base
	e.Srv = srv

	// home answers where "/" leads: the workspace while signed in, the
	// login page after.
	home := func(b *webtest.Browser, poll bool) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		if poll {
			req.Header.Set("HX-Request", "true")
			req.Header.Set("X-Tidemark-Poll", "1")
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized {
			return resp.Header.Get("HX-Redirect")
		}
		return resp.Header.Get("Location")
	}

	start := clk.Now()
	at := func(d time.Duration) { clk.set(start.Add(d)) }
	polled := e.Operator("polled@example.com", false, "acme")
	active := e.Operator("active@example.com", false, "acme")
	for _, step := range []struct {
		at         time.Duration
		b          *webtest.Browser
		poll       bool
		want, what string
	}{
		{50 * time.Minute, polled, true, "/t/acme", "polling, 50 minutes after sign-in"},
		{50 * time.Minute, active, false, "/t/acme", "clicking, 50 minutes after sign-in"},
		{65 * time.Minute, polled, true, "/login", "polling, 65 minutes after sign-in"},
		{100 * time.Minute, active, false, "/t/acme", "clicking, 50 minutes after the last click"},
	} {
		at(step.at)
		if got := home(step.b, step.poll); got != step.want {
			t.Fatalf("%s: / led to %q, want %q", step.what, got, step.want)
		}
	}
	for d := 150 * time.Minute; d < console.SessionLifetime; d += 50 * time.Minute {
		at(d)
		if got := home(active, false); got != "/t/acme" {
			t.Fatalf("clicking every 50 minutes, %s after sign-in: / led to %q", d, got)
		}
	}
	at(console.SessionLifetime + 10*time.Minute)
	if got := home(active, false); got != "/login" {
		t.Fatalf("%s after sign-in: / led to %q, want the login page", console.SessionLifetime+10*time.Minute, got)
	}
}

func TestMetricsElsewhere(t *testing.T) {
	t.Parallel()
	s := web.New(web.Config{MetricsElsewhere: true, Logger: webtest.QuietLog()})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("/metrics on the public handler answered %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "tidemark_") {
		t.Fatalf("MetricsHandler answered %d", rec.Code)
	}
}
