package hook

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// RefusalLimits bound how fast refused deliveries are answered with their
// own status; past them the answer is 429 with Retry-After. Only refusals
// use the budgets: an accepted delivery never does. Zero fields take the
// defaults (docs/contract/webhooks.md#refusal-budgets).
type RefusalLimits struct {
	PerAddress   float64 // refusals a second from one client address (IPv6: one /64); default 20
	AddressBurst int     // default 40
	PerProvider  float64 // refusals a second for one provider, from all addresses; default 100
	// ProviderBurst defaults to 200.
	ProviderBurst int
}

func (l RefusalLimits) withDefaults() RefusalLimits {
	if l.PerAddress <= 0 {
		l.PerAddress = 20
	}
	if l.AddressBurst <= 0 {
		l.AddressBurst = 40
	}
	if l.PerProvider <= 0 {
		l.PerProvider = 100
	}
	if l.ProviderBurst <= 0 {
		l.ProviderBurst = 200
	}
	return l
}

// maxLimiterKeys caps the entries of one limiter (about 64 bytes each). An
// attacker rotating through IPv6 prefixes fills it at worst; a key that
// finds no room is treated as out of budget.
const maxLimiterKeys = 1 << 16

// limiter is a token bucket per key: a key holds up to burst tokens and
// gains rate tokens a second; a refusal takes one. A bucket that has filled
// up again is the same as none, so it is forgotten.
type limiter[K comparable] struct {
	rate, burst float64

	mu      sync.Mutex
	buckets map[K]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter[K comparable](rate float64, burst int) *limiter[K] {
	return &limiter[K]{rate: rate, burst: float64(burst), buckets: map[K]*bucket{}}
}

// take uses one token of k. When none is left it reports how long until
// one is.
func (l *limiter[K]) take(k K, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(k, now)
	if b == nil {
		return false, time.Second
	}
	if b.tokens < 1 {
		return false, l.until(b)
	}
	b.tokens--
	return true, 0
}

// exhausted reports, without using a token, whether k has none left.
func (l *limiter[K]) exhausted(k K, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[k]
	if !ok {
		return false, 0
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return false, 0
	}
	return true, l.until(b)
}

// bucket returns k's bucket refilled to now, creating a full one; nil when
// the limiter is full even after forgetting idle buckets.
func (l *limiter[K]) bucket(k K, now time.Time) *bucket {
	if b, ok := l.buckets[k]; ok {
		l.refill(b, now)
		return b
	}
	// Sweep once a minute, or once a second while full: a sweep walks
	// every bucket, so a full limiter must not sweep on every request.
	if since := now.Sub(l.swept); since > time.Minute || len(l.buckets) >= maxLimiterKeys && since > time.Second {
		l.sweep(now)
	}
	if len(l.buckets) >= maxLimiterKeys {
		return nil
	}
	b := &bucket{tokens: l.burst, at: now}
	l.buckets[k] = b
	return b
}

func (l *limiter[K]) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
}

// sweep forgets the buckets that have filled up again.
func (l *limiter[K]) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.burst {
			delete(l.buckets, k)
		}
	}
}

func (l *limiter[K]) until(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// refusalLimiter holds the per-address and per-provider budgets.
type refusalLimiter struct {
	addresses *limiter[netip.Prefix]
	providers *limiter[int64]
}

func newRefusalLimiter(l RefusalLimits) *refusalLimiter {
	l = l.withDefaults()
	return &refusalLimiter{addresses: newLimiter[netip.Prefix](l.PerAddress, l.AddressBurst),
		providers: newLimiter[int64](l.PerProvider, l.ProviderBurst)}
}

// refuse spends one refusal of the address and, when known (non-zero), of
// the provider. It reports which budget ran out, if one did, and when to
// retry.
func (rl *refusalLimiter) refuse(addr netip.Prefix, providerID int64, now time.Time) (over string, wait time.Duration) {
	if ok, wait := rl.addresses.take(addr, now); !ok {
		return "address", wait
	}
	if providerID == 0 {
		return "", 0
	}
	if ok, wait := rl.providers.take(providerID, now); !ok {
		return "provider", wait
	}
	return "", 0
}

// clientPrefix is the budget key of a request's client: its address, or
// for IPv6 its /64, which one subscriber usually holds whole.
func clientPrefix(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{} // not an IP address: every such client shares one budget
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// retryAfter is wait in whole seconds for the Retry-After header, at least 1.
func retryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}
