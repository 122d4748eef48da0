package httpx

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// maxBudgetKeys caps the entries of one limiter (about 64 bytes each). An
// attacker rotating through IPv6 prefixes fills it at worst; a key that
// finds no room is treated as out of budget.
const maxBudgetKeys = 1 << 16

// Budget is a token bucket per key: a key holds up to burst tokens and
// gains rate tokens a second; a refusal takes one. A bucket that has filled
// up again is the same as none, so it is forgotten.
type Budget[K comparable] struct {
	rate, burst float64

	mu      sync.Mutex
	buckets map[K]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewBudget returns a budget of burst tokens per key, refilled at rate a
// second.
func NewBudget[K comparable](rate float64, burst int) *Budget[K] {
	return &Budget[K]{rate: rate, burst: float64(burst), buckets: map[K]*bucket{}}
}

// Take uses one token of k. When none is left it reports how long until
// one is.
func (l *Budget[K]) Take(k K, now time.Time) (ok bool, wait time.Duration) {
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

// Give returns a token to k, as when what took it turned out to be no
// refusal.
func (l *Budget[K]) Give(k K, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[k]; ok {
		l.refill(b, now)
		b.tokens = math.Min(l.burst, b.tokens+1)
	}
}

// Exhausted reports, without using a token, whether k has none left.
func (l *Budget[K]) Exhausted(k K, now time.Time) (bool, time.Duration) {
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
func (l *Budget[K]) bucket(k K, now time.Time) *bucket {
	if b, ok := l.buckets[k]; ok {
		l.refill(b, now)
		return b
	}
	// Sweep once a minute, or once a second while full: a sweep walks
	// every bucket, so a full limiter must not sweep on every request.
	if since := now.Sub(l.swept); since > time.Minute || len(l.buckets) >= maxBudgetKeys && since > time.Second {
		l.sweep(now)
	}
	if len(l.buckets) >= maxBudgetKeys {
		return nil
	}
	b := &bucket{tokens: l.burst, at: now}
	l.buckets[k] = b
	return b
}

func (l *Budget[K]) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
}

// sweep forgets the buckets that have filled up again.
func (l *Budget[K]) sweep(now time.Time) {
	l.swept = now
	for k, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.burst {
			delete(l.buckets, k)
		}
	}
}

func (l *Budget[K]) until(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// ClientPrefix is the budget key of a request's client: its address, or
// for IPv6 its /64, which one subscriber usually holds whole.
func ClientPrefix(r *http.Request) netip.Prefix {
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

// RetryAfter is wait in whole seconds for the Retry-After header, at least 1.
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}
