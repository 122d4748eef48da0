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

// maxBudgetKeys caps the entries of one limiter (about 100 bytes each). An
// attacker rotating through IPv6 prefixes fills it at worst; a new key that
// finds no room takes the place of the key used longest ago, so newcomers
// are never refused because the table is full.
const maxBudgetKeys = 1 << 16

// Budget is a token bucket per key: a key holds up to burst tokens and
// gains rate tokens a second; a refusal takes one. A bucket that has filled
// up again is the same as none, so it is forgotten.
type Budget[K comparable] struct {
	rate, burst float64
	max         int // maxBudgetKeys; tests lower it

	mu      sync.Mutex
	buckets map[K]*bucket[K]
	// newest and oldest end the list of buckets by last use (Take, Give),
	// from which a full limiter evicts the oldest.
	newest, oldest *bucket[K]
	swept          time.Time
}

type bucket[K comparable] struct {
	key          K
	tokens       float64
	at           time.Time
	newer, older *bucket[K]
}

// NewBudget returns a budget of burst tokens per key, refilled at rate a
// second.
func NewBudget[K comparable](rate float64, burst int) *Budget[K] {
	return &Budget[K]{rate: rate, burst: float64(burst), max: maxBudgetKeys, buckets: map[K]*bucket[K]{}}
}

// Take uses one token of k. When none is left it reports how long until
// one is.
func (l *Budget[K]) Take(k K, now time.Time) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(k, now)
	l.touch(b)
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
		l.touch(b)
	}
}

// Forget drops k's bucket, giving it its whole burst again.
func (l *Budget[K]) Forget(k K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[k]; ok {
		l.remove(b)
	}
}

// Len is how many keys the limiter holds.
func (l *Budget[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// Exhausted reports, without using a token or creating a bucket, whether
// k has none left.
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

// bucket returns k's bucket refilled to now, creating a full one. A full
// limiter first forgets the buckets that filled up again, then the bucket
// used longest ago.
func (l *Budget[K]) bucket(k K, now time.Time) *bucket[K] {
	if b, ok := l.buckets[k]; ok {
		l.refill(b, now)
		return b
	}
	// Sweep once a minute, or once a second while full: a sweep walks
	// every bucket, so a full limiter must not sweep on every request.
	if since := now.Sub(l.swept); since > time.Minute || len(l.buckets) >= l.max && since > time.Second {
		l.sweep(now)
	}
	for len(l.buckets) >= l.max && l.oldest != nil {
		l.remove(l.oldest)
	}
	b := &bucket[K]{key: k, tokens: l.burst, at: now}
	l.buckets[k] = b
	return b
}

func (l *Budget[K]) refill(b *bucket[K], now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+d.Seconds()*l.rate)
		b.at = now
	}
}

// touch moves b to the newest end of the list, linking it in if new.
func (l *Budget[K]) touch(b *bucket[K]) {
	if l.newest == b {
		return
	}
	l.unlink(b)
	b.older, b.newer = l.newest, nil
	if l.newest != nil {
		l.newest.newer = b
	}
	l.newest = b
	if l.oldest == nil {
		l.oldest = b
	}
}

func (l *Budget[K]) unlink(b *bucket[K]) {
	if b.newer != nil {
		b.newer.older = b.older
	} else if l.newest == b {
		l.newest = b.older
	}
	if b.older != nil {
		b.older.newer = b.newer
	} else if l.oldest == b {
		l.oldest = b.newer
	}
	b.newer, b.older = nil, nil
}

func (l *Budget[K]) remove(b *bucket[K]) {
	l.unlink(b)
	delete(l.buckets, b.key)
}

// sweep forgets the buckets that have filled up again.
func (l *Budget[K]) sweep(now time.Time) {
	l.swept = now
	for _, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.burst {
			l.remove(b)
		}
	}
}

func (l *Budget[K]) until(b *bucket[K]) time.Duration {
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

// ClientNetwork is the /48 of an IPv6 client prefix (ClientPrefix), the
// block a site is commonly given and a tunnel broker hands out free: it
// holds 65,536 /64s, each with a budget of its own. It is false for IPv4
// clients, whose address is already their only key.
func ClientNetwork(p netip.Prefix) (netip.Prefix, bool) {
	if !p.IsValid() || !p.Addr().Is6() {
		return netip.Prefix{}, false
	}
	n, err := p.Addr().Prefix(48)
	return n, err == nil
}

// RetryAfter is wait in whole seconds for the Retry-After header, at least 1.
func RetryAfter(wait time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
}
