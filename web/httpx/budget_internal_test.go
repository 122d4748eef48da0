package httpx

import (
	"net/http"
	"testing"
	"time"
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
		if got := ClientPrefix(&http.Request{RemoteAddr: c.remote}).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.remote, got, c.want)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	l := NewBudget[int](2, 3) // 2 a second, burst 3
	now := time.Now()
	for i := range 3 {
		if ok, _ := l.Take(1, now); !ok {
			t.Fatalf("take %d within the burst refused", i+1)
		}
	}
	if over, _ := l.Exhausted(2, now); over {
		t.Fatal("an unseen key is exhausted")
	}
	over, wait := l.Exhausted(1, now)
	if ok, wait2 := l.Take(1, now); ok || !over || wait != 500*time.Millisecond || wait2 != wait {
		t.Fatalf("past the burst: take %v, exhausted %v, waits %v and %v; want refused, 500ms", ok, over, wait, wait2)
	}
	if ok, _ := l.Take(1, now.Add(500*time.Millisecond)); !ok {
		t.Fatal("no token after the wait")
	}
	if ok, _ := l.Take(1, now.Add(500*time.Millisecond)); ok {
		t.Fatal("two tokens after one's wait")
	}

	// Buckets that filled up again are forgotten by the next sweep.
	l.Take(2, now)
	later := now.Add(2 * time.Minute)
	l.Take(3, later)
	if len(l.buckets) != 1 {
		t.Fatalf("%d buckets after the sweep, want only the new one", len(l.buckets))
	}

	// A full limiter refuses new keys (answered 429) rather than growing.
	for k := range maxBudgetKeys {
		l.Take(k+10, later)
	}
	if ok, _ := l.Take(-1, later); ok || len(l.buckets) != maxBudgetKeys {
		t.Fatalf("a new key on a full limiter: %v with %d buckets", ok, len(l.buckets))
	}
	if ok, _ := l.Take(-1, later.Add(time.Minute+time.Second)); !ok || len(l.buckets) != 1 {
		t.Fatalf("after the idle keys refilled: %v with %d buckets, want a place", ok, len(l.buckets))
	}
}
