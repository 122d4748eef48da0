package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/internal/netlist"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted, err := netlist.Parse("10.0.0.0/8, 192.0.2.7,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no header", "10.1.1.1:5000", nil, "10.1.1.1:5000"},
		{"untrusted peer: header ignored", "198.51.100.9:5000", []string{"13.108.1.2"}, "198.51.100.9:5000"},
		{"trusted proxy", "10.1.1.1:5000", []string{"13.108.1.2"}, "13.108.1.2:0"},
		{"trusted single host", "192.0.2.7:5000", []string{"13.108.1.2"}, "13.108.1.2:0"},
		{"a trusted host's neighbour is not", "192.0.2.8:5000", []string{"13.108.1.2"}, "192.0.2.8:5000"},
		{"chain of proxies", "10.1.1.1:5000", []string{"13.108.1.2, 10.2.2.2, 10.3.3.3"}, "13.108.1.2:0"},
		{"forged left of the client", "10.1.1.1:5000", []string{"13.108.1.2, 203.0.113.5, 10.2.2.2"}, "203.0.113.5:0"},
		{"forged garbage left of the client", "10.1.1.1:5000", []string{"not-an-ip, 203.0.113.5"}, "203.0.113.5:0"},
		{"several headers", "10.1.1.1:5000", []string{"13.108.1.2", "10.2.2.2"}, "13.108.1.2:0"},
		{"only proxies", "10.1.1.1:5000", []string{"10.9.9.9, 10.2.2.2"}, "10.9.9.9:0"},
		{"IPv6", "[2001:db8::1]:443", []string{"2a01:111:f400::5"}, "[2a01:111:f400::5]:0"},
		{"IPv4-mapped peer", "[::ffff:10.1.1.1]:5000", []string{"13.108.1.2"}, "13.108.1.2:0"},
		{"address with a port", "10.1.1.1:5000", []string{"13.108.1.2:1234"}, "13.108.1.2:0"},
		{"malformed: keep the peer", "10.1.1.1:5000", []string{"13.108.1.2, bogus"}, "10.1.1.1:5000"},
		{"empty entry: keep the peer", "10.1.1.1:5000", []string{"13.108.1.2,"}, "10.1.1.1:5000"},
		{"zone: keep the peer", "10.1.1.1:5000", []string{"fe80::1%eth0"}, "10.1.1.1:5000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got string
			h := ClientAddr(trusted)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tc.want {
				t.Errorf("RemoteAddr %q, want %q", got, tc.want)
			}
		})
	}

	// Without trusted proxies the header is never read.
	var got string
	h := ClientAddr(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.1.1.1:5000"
	r.Header.Set("X-Forwarded-For", "13.108.1.2")
	if h.ServeHTTP(httptest.NewRecorder(), r); got != "10.1.1.1:5000" {
		t.Errorf("no trusted proxies: RemoteAddr %q", got)
	}
}
