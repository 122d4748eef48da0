// Package egress makes the outbound connections that customers point
// Tidemark at (destination URLs, NATS servers) refuse loopback, private,
// link-local and other internal addresses, so that a destination cannot be
// used to reach the service's own network or a cloud metadata endpoint
// (server-side request forgery).
//
// Addresses are checked twice: by CheckURL when a destination is created,
// for a clear error then, and by Dialer's hook on every connection after
// DNS resolution, which is what holds: a name that resolved to a public
// address at creation and to an internal one later (DNS rebinding) is
// still refused.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// ErrPrivate is wrapped by every refusal of an address.
var ErrPrivate = errors.New("connections to private or internal addresses are refused")

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")     // 0.0.0.0 and "this network"
	cgnat       = netip.MustParsePrefix("100.64.0.0/10") // shared address space (RFC 6598)
	nat64       = netip.MustParsePrefix("64:ff9b::/96")  // reaches the IPv4 address in its last 32 bits
)

// kind names the refused range ip is in, with its article, or returns ""
// when ip may be reached.
func kind(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !ip.IsValid():
		return "an invalid address"
	case ip.IsUnspecified() || thisNetwork.Contains(ip):
		return "an unspecified address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate(): // 10/8, 172.16/12, 192.168/16, fc00::/7 (incl. fd00:ec2::254)
		return "a private address"
	case ip.IsLinkLocalUnicast(): // 169.254/16 (incl. 169.254.169.254), fe80::/10
		return "a link-local address"
	case cgnat.Contains(ip):
		return "a shared (CGNAT) address"
	case ip.IsMulticast():
		return "a multicast address"
	}
	return ""
}

// CheckURL validates a destination URL when it is created: scheme http or
// https, a host, no user name or password; then, unless allowPrivate, it
// resolves the host (ctx bounds the lookup) and refuses it, with an error
// wrapping ErrPrivate, when any address it resolves to is Blocked. With
// allowPrivate nothing is looked up. Errors never repeat the URL, which
// may hold a credential in its query; nor what the host resolved to, nor
// the resolver's error (a *Refusal's Detail).
func CheckURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	return check(ctx, raw, allowPrivate, "http", "https")
}

// CheckNATSURL is CheckURL for a NATS server: scheme nats or tls
// (nats://host:4222); credentials are given apart from the URL.
func CheckNATSURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	return check(ctx, raw, allowPrivate, "nats", "tls")
}

func check(ctx context.Context, raw string, allowPrivate bool, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL itself
		}
		return nil, fmt.Errorf("url: %w", err)
	}
	if !slices.Contains(schemes, u.Scheme) {
		return nil, fmt.Errorf("url: scheme must be %s or %s", schemes[0], schemes[1])
	}
	if u.User != nil {
		return nil, errors.New("url: must not contain a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("url: a host is required")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("url: port must be 1 to 65535")
		}
	}
	if allowPrivate {
		return u, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if k := kind(ip); k != "" {
			return nil, fmt.Errorf("url: host %s is %s: %w", host, k, ErrPrivate)
		}
		return u, nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, &Refusal{msg: "url: " + unresolved(host, err), Detail: err.Error()}
	}
	for _, ip := range addrs {
		if k := kind(ip); k != "" {
			return nil, &Refusal{msg: fmt.Sprintf("url: host %s resolves to a private or internal address", host),
				Detail: fmt.Sprintf("%s resolves to %s, %s", host, ip, k), err: ErrPrivate}
		}
	}
	return u, nil
}

// Refusal is the refusal of a host for what it resolves to, or because it
// does not resolve. Its message names the host, never the address it
// resolved to nor the resolver's error: those would show whoever asked
// (a tenant's owner or token) the service's internal DNS. Detail holds
// them, for the server log.
type Refusal struct {
	msg    string
	Detail string
	err    error // ErrPrivate, or nil
}

func (r *Refusal) Error() string {
	if r.err != nil {
		return r.msg + ": " + r.err.Error()
	}
	return r.msg
}

func (r *Refusal) Unwrap() error { return r.err }

// Detail is the detail of the Refusal in err's chain, for the server log,
// or "" when there is none.
func Detail(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Detail
	}
	return ""
}

// ConnError is the text of err, an error connecting to host, for those who
// see a destination's attempts: a refused address (Dialer) or a failed DNS
// lookup names the host, not the address nor the resolver; detail then
// holds err's own text, for the server log ("" otherwise).
func ConnError(host string, err error) (text, detail string) {
	var dns *net.DNSError
	switch {
	case errors.Is(err, ErrPrivate):
		return fmt.Sprintf("host %s is or resolves to a private or internal address: %s", host, ErrPrivate), err.Error()
	case errors.As(err, &dns):
		return unresolved(host, dns), err.Error()
	}
	return err.Error(), ""
}

// unresolved says that host did not resolve, or not in time.
func unresolved(host string, err error) string {
	var dns *net.DNSError
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &dns) && dns.IsTimeout {
		return fmt.Sprintf("host %s could not be resolved in time; try again", host)
	}
	return fmt.Sprintf("host %s does not resolve", host)
}

// Dialer returns a dialer with the given connect timeout whose Control
// hook, run on every connection attempt after DNS resolution, refuses a
// Blocked address with an error wrapping ErrPrivate, unless allowPrivate.
func Dialer(allowPrivate bool, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = refuseBlocked
	}
	return d
}

// refuseBlocked is a net.Dialer Control hook; address is the resolved
// "ip:port". What it cannot read as one is refused too.
func refuseBlocked(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress: %s address %q is not an IP address and port: %w", network, address, ErrPrivate)
	}
	if k := kind(ap.Addr()); k != "" {
		return fmt.Errorf("egress: %s is %s: %w", ap.Addr(), k, ErrPrivate)
	}
	return nil
}

// NewClient returns the client that sends to destinations: connections
// through Dialer, timeout bounding each whole request, no cookie jar, and
// redirects not followed (a 3xx is the destination's answer, returned as
// is: following it would send the signed message somewhere the customer
// did not configure). Proxy settings in the environment are ignored, as a
// proxy would make the connection where Dialer cannot check it.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            Dialer(allowPrivate, timeout).DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:      true,
			MaxIdleConnsPerHost:    16,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 64 << 10, // the answer comes from a customer's server
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
