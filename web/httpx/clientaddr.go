package httpx

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr rewrites r.RemoteAddr to the client's address, so everything
// keyed on it (Salesforce's allowed networks, sign-in throttling, rate
// limits) sees the client rather than a proxy. X-Forwarded-For is believed
// only when the peer is a trusted proxy, and then read from the right: the
// client is the nearest address that is not itself a trusted proxy. Any
// address left of it was written by the client and proves nothing. A
// header that cannot be read leaves the peer.
// A trusted proxy saying X-Forwarded-Proto: https is noted for
// ForwardedHTTPS.
func ClientAddr(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if len(trusted) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if peer, ok := remoteIP(r.RemoteAddr); ok && isTrusted(peer, trusted) && saysHTTPS(r) {
				r = r.WithContext(context.WithValue(r.Context(), forwardedHTTPSKey{}, true))
			}
			if client, ok := forwardedClient(r, trusted); ok {
				r.RemoteAddr = netip.AddrPortFrom(client, 0).String()
			}
			next.ServeHTTP(w, r)
		})
	}
}

type forwardedHTTPSKey struct{}

// ForwardedHTTPS reports whether a trusted proxy said, in
// X-Forwarded-Proto, that the client reached it over https: the client's
// connection is TLS although this one is not.
func ForwardedHTTPS(r *http.Request) bool {
	v, _ := r.Context().Value(forwardedHTTPSKey{}).(bool)
	return v
}

// saysHTTPS reports whether X-Forwarded-Proto names https. A chain of
// proxies may list one scheme each; any https means the client's hop was
// TLS or a proxy added it, and a Secure cookie is then the safe side.
func saysHTTPS(r *http.Request) bool {
	for _, v := range r.Header.Values("X-Forwarded-Proto") {
		for _, p := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "https") {
				return true
			}
		}
	}
	return false
}

// forwardedClient returns the client X-Forwarded-For names, when the peer
// is a trusted proxy and the header can be read.
func forwardedClient(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, ok := remoteIP(r.RemoteAddr)
	if !ok || !isTrusted(peer, trusted) {
		return netip.Addr{}, false
	}
	values := r.Header.Values("X-Forwarded-For")
	if len(values) == 0 {
		return netip.Addr{}, false
	}
	hops := strings.Split(strings.Join(values, ","), ",")
	var client netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		addr, ok := remoteIP(strings.TrimSpace(hops[i]))
		if !ok {
			return netip.Addr{}, false
		}
		client = addr
		if !isTrusted(addr, trusted) {
			break
		}
	}
	return client, true
}

// remoteIP reads an address with or without a port.
func remoteIP(s string) (netip.Addr, bool) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
