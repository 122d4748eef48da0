// Package egress is a stand-in with the signatures of branch egress, which
// replaces it when merged: it checks only the scheme and literal addresses.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
)

// ErrPrivate is wrapped by refusals of private addresses.
var ErrPrivate = errors.New("private address")

// CheckURL refuses a URL that is not http(s) or, unless allowPrivate, one
// naming a loopback, private, link-local or metadata address.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	return check(raw, allowPrivate, "http", "https")
}

// CheckNATSURL is CheckURL for a NATS server (nats:// or tls://).
func CheckNATSURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	return check(raw, allowPrivate, "nats", "tls")
}

func check(raw string, allowPrivate bool, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != schemes[0] && u.Scheme != schemes[1]) {
		return nil, fmt.Errorf("%q is not a %s:// or %s:// URL", raw, schemes[0], schemes[1])
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate &&
		(a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified()) {
		return nil, fmt.Errorf("%s is a loopback, private, link-local or metadata address: %w", a, ErrPrivate)
	}
	if u.Hostname() == "localhost" && !allowPrivate {
		return nil, fmt.Errorf("localhost is a loopback address: %w", ErrPrivate)
	}
	return u, nil
}
