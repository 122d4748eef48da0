package hook

import (
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

func TestClientPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ remote, want string }{
		{"203.0.113.7:5000", "203.0.113.7/32"},
		{"[::ffff:203.0.113.7]:5000", "203.0.113.7/32"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:1", "2001:db8:1:2::/64"}, // same subscriber, same budget
		{"[fe80::1%eth0]:1", "fe80::/64"},
		{"203.0.113.8", "203.0.113.8/32"},
		{"@", "invalid Prefix"},
	} {
		if got := clientPrefix(&http.Request{RemoteAddr: c.remote}).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.remote, got, c.want)
		}
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := newLimiter[int](2, 3) // 2 a second, burst 3
	now := time.Now()
	for i := range 3 {
		if ok, _ := l.take(1, now); !ok {
			t.Fatalf("take %d within the burst refused", i+1)
		}
	}
	if over, _ := l.exhausted(2, now); over {
		t.Fatal("an unseen key is exhausted")
	}
	over, wait := l.exhausted(1, now)
	if ok, wait2 := l.take(1, now); ok || !over || wait != 500*time.Millisecond || wait2 != wait {
		t.Fatalf("past the burst: take %v, exhausted %v, waits %v and %v; want refused, 500ms", ok, over, wait, wait2)
	}
	if ok, _ := l.take(1, now.Add(500*time.Millisecond)); !ok {
		t.Fatal("no token after the wait")
	}
	if ok, _ := l.take(1, now.Add(500*time.Millisecond)); ok {
		t.Fatal("two tokens after one's wait")
	}

	// Buckets that filled up again are forgotten by the next sweep.
	l.take(2, now)
	later := now.Add(2 * time.Minute)
	l.take(3, later)
	if len(l.buckets) != 1 {
		t.Fatalf("%d buckets after the sweep, want only the new one", len(l.buckets))
	}

	// A full limiter refuses new keys (answered 429) rather than growing.
	for k := range maxLimiterKeys {
		l.take(k+10, later)
	}
	if ok, _ := l.take(-1, later); ok || len(l.buckets) != maxLimiterKeys {
		t.Fatalf("a new key on a full limiter: %v with %d buckets", ok, len(l.buckets))
	}
	if ok, _ := l.take(-1, later.Add(time.Minute+time.Second)); !ok || len(l.buckets) != 1 {
		t.Fatalf("after the idle keys refilled: %v with %d buckets, want a place", ok, len(l.buckets))
	}
}

// TestRefusalSamples: every refusal is counted per provider and hour; one
// per provider and second is kept.
func TestRefusalSamples(t *testing.T) {
	t.Parallel()
	l := newRefusalLog(nil, nil)
	at := time.Date(2026, 11, 29, 10, 59, 59, 0, time.UTC)
	for _, d := range []struct {
		provider int64
		after    time.Duration
	}{{1, 0}, {1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {1, 900 * time.Millisecond}, {1, time.Second}, {1, 1500 * time.Millisecond}} {
		l.add(domain.Delivery{TenantID: 7, ProviderID: d.provider, ReceivedAt: at.Add(d.after)})
	}
	if len(l.samples) != 3 || l.samples[0].ReceivedAt != at || l.samples[1].ProviderID != 2 || l.samples[2].ReceivedAt != at.Add(time.Second) {
		t.Fatalf("samples %+v, want provider 1 at :59 and 11:00:00, provider 2 at :59", l.samples)
	}
	want := map[refusalKey]int64{{7, 1, at.Truncate(time.Hour)}: 3, {7, 1, at.Add(time.Second)}: 2, {7, 2, at.Truncate(time.Hour)}: 1}
	if len(l.counts) != len(want) {
		t.Fatalf("counts %v, want %v", l.counts, want)
	}
	for k, n := range want {
		if l.counts[k] != n {
			t.Errorf("count %v = %d, want %d", k, l.counts[k], n)
		}
	}
}
