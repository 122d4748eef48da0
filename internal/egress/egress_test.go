package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBlocked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ip      string
		blocked bool
	}{
		// loopback
		{"127.0.0.1", true}, {"127.255.255.254", true}, {"::1", true}, {"::ffff:127.0.0.1", true},
		// private
		{"10.0.0.1", true}, {"10.255.255.255", true}, {"::ffff:10.1.2.3", true},
		{"172.16.0.1", true}, {"172.31.255.255", true}, {"::ffff:172.20.0.1", true},
		{"192.168.0.1", true}, {"192.168.255.255", true}, {"::ffff:192.168.1.1", true},
		{"fc00::1", true}, {"fd12:3456::1", true}, {"fd00:ec2::254", true},
		// link-local, with the cloud metadata address
		{"169.254.0.1", true}, {"169.254.169.254", true}, {"::ffff:169.254.169.254", true},
		{"fe80::1", true}, {"fe80::1%eth0", true}, {"febf::1", true},
		// CGNAT
		{"100.64.0.1", true}, {"100.127.255.255", true}, {"100.100.100.200", true}, {"::ffff:100.64.0.1", true},
		// unspecified and "this network"
		{"0.0.0.0", true}, {"0.1.2.3", true}, {"::", true}, {"::ffff:0.0.0.0", true},
		// multicast
		{"224.0.0.1", true}, {"239.255.255.250", true}, {"ff02::1", true}, {"ff0e::1", true}, {"::ffff:224.0.0.251", true},
		// NAT64 forms of the refused IPv4 ranges
		{"64:ff9b::7f00:1", true}, {"64:ff9b::a9fe:a9fe", true},
		// public, including the neighbours of each IPv4 range
		{"8.8.8.8", false}, {"1.1.1.1", false}, {"::ffff:8.8.8.8", false}, {"64:ff9b::808:808", false},
		{"2606:4700:4700::1111", false}, {"2001:4860:4860::8888", false},
		{"9.255.255.255", false}, {"11.0.0.0", false}, {"126.255.255.255", false}, {"128.0.0.0", false},
		{"172.15.255.255", false}, {"172.32.0.0", false}, {"192.167.255.255", false}, {"192.169.0.0", false},
		{"169.253.255.255", false}, {"169.255.0.0", false}, {"100.63.255.255", false}, {"100.128.0.0", false},
		{"1.0.0.0", false}, {"223.255.255.255", false}, {"fbff:ffff::1", false}, {"fec0::1", false},
	} {
		if got := blocked(netip.MustParseAddr(tc.ip)); got != tc.blocked {
			t.Errorf("blocked(%s) = %v, want %v", tc.ip, got, tc.blocked)
		}
	}
	if !blocked(netip.Addr{}) {
		t.Error("the zero Addr is not blocked")
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		raw     string
		private bool   // the refusal wraps ErrPrivate
		err     string // a plain refusal containing this; "" when accepted
	}{
		{raw: "https://203.0.113.9/hooks"},
		{raw: "http://198.51.100.7:8080/in?token=x"},
		{raw: "https://[2606:4700:4700::1111]/hooks"},
		{raw: "HTTPS://203.0.113.9/"},
		{raw: "ftp://203.0.113.9/", err: "url: scheme must be http or https"},
		{raw: "javascript:alert(1)", err: "url: scheme must be http or https"},
		{raw: "//203.0.113.9/", err: "url: scheme must be http or https"},
		{raw: "203.0.113.9", err: "url: scheme must be http or https"},
		{raw: "http:203.0.113.9", err: "url: a host is required"},
		{raw: "https:///path", err: "url: a host is required"},
		{raw: "https://user:pw@203.0.113.9/", err: "url: must not contain a user name or password"},
		{raw: "https://token@203.0.113.9/", err: "url: must not contain a user name or password"},
		{raw: "https://203.0.113.9:0/", err: "url: port must be 1 to 65535"},
		{raw: "https://203.0.113.9:65536/", err: "url: port must be 1 to 65535"},
		{raw: "https://203.0.113.9:x/", err: "url: "},
		{raw: "http://127.0.0.1/", private: true},
		{raw: "http://localhost:8080/", private: true},
		{raw: "http://[::1]/", private: true},
		{raw: "http://10.0.0.5/", private: true},
		{raw: "http://172.16.3.4/", private: true},
		{raw: "http://192.168.1.1/", private: true},
		{raw: "http://[fd00::1]/", private: true},
		{raw: "http://169.254.169.254/latest/meta-data/", private: true},
		{raw: "http://[fd00:ec2::254]/", private: true},
		{raw: "http://[fe80::1%25eth0]/", private: true},
		{raw: "http://100.64.0.1/", private: true},
		{raw: "http://0.0.0.0/", private: true},
		{raw: "http://[::]/", private: true},
		{raw: "http://224.0.0.1/", private: true},
		{raw: "http://[::ffff:127.0.0.1]/", private: true},
		{raw: "http://[::ffff:169.254.169.254]/", private: true},
	} {
		u, err := CheckURL(ctx, tc.raw, false)
		switch {
		case tc.private:
			if !errors.Is(err, ErrPrivate) {
				t.Errorf("CheckURL(%s) = %v, %v; want ErrPrivate", tc.raw, u, err)
			}
		case tc.err != "":
			if err == nil || errors.Is(err, ErrPrivate) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("CheckURL(%s) = %v, %v; want an error with %q", tc.raw, u, err, tc.err)
			}
		case err != nil || u == nil:
			t.Errorf("CheckURL(%s) = %v, %v; want it accepted", tc.raw, u, err)
		}
	}
}

// The refusal names the host, never the address it resolved to nor the
// resolver's error (review 4, L3: they show a tenant the service's
// internal DNS), which its Detail keeps for the server log; and never the
// rest of the URL (its query may hold a token).
func TestCheckURLMessage(t *testing.T) {
	t.Parallel()
	_, err := CheckURL(context.Background(), "http://localhost:9/in?token=s3cret", false)
	want := "url: host localhost resolves to a private or internal address: " + ErrPrivate.Error()
	if !errors.Is(err, ErrPrivate) || err.Error() != want {
		t.Fatalf("err = %v; want ErrPrivate, %q", err, want)
	}
	if d := Detail(err); !strings.HasPrefix(d, "localhost resolves to ") || !strings.HasSuffix(d, ", a loopback address") {
		t.Errorf("detail %q does not name the address", d)
	}
	_, err = CheckURL(context.Background(), "https://nothing.invalid/in?token=s3cret", false)
	if want := "url: host nothing.invalid does not resolve"; err == nil || errors.Is(err, ErrPrivate) || err.Error() != want {
		t.Fatalf("err = %v; want %q without the resolver's error", err, want)
	}
	if d := Detail(err); !strings.Contains(d, "lookup nothing.invalid") {
		t.Errorf("detail %q is not the resolver's error", d)
	}
	_, err = CheckURL(context.Background(), "http://u:s3cret@%zz/", false)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v; want a refusal that does not repeat the password", err)
	}
}

// ConnError names the host of a refused connection or a failed lookup, not
// the address or the resolver, which its detail keeps.
func TestConnError(t *testing.T) {
	t.Parallel()
	srv, _ := counting(t, func(http.ResponseWriter, *http.Request) {})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	_, err := NewClient(false, 5*time.Second).Post("http://localhost:"+strconv.Itoa(port)+"/", "application/json", strings.NewReader("{}"))
	text, detail := ConnError("localhost", err)
	if text != "host localhost is or resolves to a private or internal address: "+ErrPrivate.Error() ||
		!strings.Contains(detail, "a loopback address") {
		t.Errorf("refused: %q, detail %q", text, detail)
	}
	_, err = NewClient(false, 5*time.Second).Post("http://nothing.invalid/", "application/json", strings.NewReader("{}"))
	if text, detail := ConnError("nothing.invalid", err); text != "host nothing.invalid does not resolve" || !strings.Contains(detail, "lookup") {
		t.Errorf("unresolved: %q, detail %q", text, detail)
	}
	if text, detail := ConnError("h", io.ErrUnexpectedEOF); text != io.ErrUnexpectedEOF.Error() || detail != "" {
		t.Errorf("other: %q, detail %q", text, detail)
	}
}

func TestCheckURLAllowPrivate(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"http://localhost:8080/", "http://127.0.0.1/", "http://[::1]/", "http://169.254.169.254/"} {
		if _, err := CheckURL(context.Background(), raw, true); err != nil {
			t.Errorf("CheckURL(%s, allowPrivate) = %v", raw, err)
		}
	}
	// The form is checked all the same.
	if _, err := CheckURL(context.Background(), "ftp://localhost/", true); err == nil {
		t.Error("CheckURL(ftp://localhost/, allowPrivate) accepted it")
	}
}

func TestCheckNATSURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, raw := range []string{"nats://203.0.113.9:4222", "tls://203.0.113.9:4222", "nats://[2606:4700:4700::1111]:4222", "nats://198.51.100.7"} {
		if _, err := CheckNATSURL(ctx, raw, false); err != nil {
			t.Errorf("CheckNATSURL(%s) = %v", raw, err)
		}
	}
	for _, raw := range []string{"nats://127.0.0.1:4222", "nats://localhost:4222", "tls://10.0.0.2:4222", "nats://[::ffff:192.168.0.1]:4222"} {
		if _, err := CheckNATSURL(ctx, raw, false); !errors.Is(err, ErrPrivate) {
			t.Errorf("CheckNATSURL(%s) = %v, want ErrPrivate", raw, err)
		}
		if _, err := CheckNATSURL(ctx, raw, true); err != nil {
			t.Errorf("CheckNATSURL(%s, allowPrivate) = %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"http://203.0.113.9:4222":         "url: scheme must be nats or tls",
		"ws://203.0.113.9:4222":           "url: scheme must be nats or tls",
		"nats://user:pw@203.0.113.9:4222": "url: must not contain a user name or password",
		"nats://token@203.0.113.9:4222":   "url: must not contain a user name or password",
		"nats://:4222":                    "url: a host is required",
		"nats://203.0.113.9:99999":        "url: port must be 1 to 65535",
	} {
		if _, err := CheckNATSURL(ctx, raw, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckNATSURL(%s) = %v, want %q", raw, err, want)
		}
	}
}

// counting is a test server on 127.0.0.1 that counts the requests reaching it.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestNewClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, hits := counting(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "reached") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	byName := "http://localhost:" + strconv.Itoa(port) + "/"

	for _, target := range []string{srv.URL, byName} {
		resp, err := NewClient(false, 5*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("POST %s reached the server: %s", target, resp.Status)
		}
		if !errors.Is(err, ErrPrivate) {
			t.Fatalf("POST %s: %v, want ErrPrivate", target, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the server", hits.Load())
	}

	resp, err := NewClient(true, 5*time.Second).Get(byName)
	if err != nil {
		t.Fatalf("allowPrivate: %v", err)
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(body) != "reached" {
		t.Fatalf("allowPrivate: %s %q", resp.Status, body)
	}
}

// The dialer's hook also holds outside HTTP (the NATS connection uses it),
// over IPv4 and IPv6.
func TestDialerRefusesLoopback(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: no loopback here (%v)", network, err)
			continue
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		if c, err := Dialer(false, 5*time.Second).Dial("tcp", ln.Addr().String()); !errors.Is(err, ErrPrivate) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dialer(false) to %s: %v, want ErrPrivate", ln.Addr(), err)
		}
		c, err := Dialer(true, 5*time.Second).Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Errorf("Dialer(true) to %s: %v", ln.Addr(), err)
			continue
		}
		c.Close()
	}
}

// A 3xx is the destination's answer: the client returns it and does not go
// to the Location, even on the same server.
func TestNewClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
	})
	resp, err := NewClient(true, 5*time.Second).Post(srv.URL+"/hook", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != "/moved" {
		t.Fatalf("got %s, Location %q; want the 307 itself", resp.Status, resp.Header.Get("Location"))
	}
	if followed.Load() {
		t.Fatal("the client followed the redirect")
	}
}

// timeout bounds the whole request, not only the connection: a server
// that accepts and never answers is given up on.
func TestNewClientTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv, _ := counting(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release)
	// The test's own bound, so that a client without a timeout fails it
	// rather than hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	resp, err := NewClient(true, 300*time.Millisecond).Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a server that never answers answered")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("gave up after %s, want about 300ms", took.Round(time.Millisecond))
	}
}

// blocked reports whether ip is in one of the refused ranges: loopback,
// private, link-local, CGNAT, unspecified or multicast, also in their
// IPv4-mapped IPv6 and NAT64 (64:ff9b::/96) forms.
func blocked(ip netip.Addr) bool { return kind(ip) != "" }
