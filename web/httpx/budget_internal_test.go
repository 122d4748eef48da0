package httpx

import (
	"net/http"
	"strings"
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

	// A full limiter makes room for a new key by forgetting the key used
	// longest ago: it never refuses a newcomer (answered 429) because an
	// attacker's prefixes filled it.
	for k := range maxBudgetKeys {
		l.Take(k+10, later)
	}
	l.Take(10, later) // used again: now the newest
	if ok, _ := l.Take(-1, later); !ok || len(l.buckets) != maxBudgetKeys {
		t.Fatalf("a new key on a full limiter: %v with %d buckets, want a place", ok, len(l.buckets))
	}
	if _, kept := l.buckets[10]; !kept {
		t.Fatal("the key used again was evicted")
	}
	if _, kept := l.buckets[11]; kept {
		t.Fatal("the key used longest ago was kept")
	}
	if ok, _ := l.Take(-2, later.Add(time.Minute+time.Second)); !ok || len(l.buckets) != 1 {
		t.Fatalf("after the idle keys refilled: %v with %d buckets, want only the new one", ok, len(l.buckets))
	}
}

// TestBudgetEvictsOldest: a full limiter evicts keys in the order of their
// last use (Take or Give), drained or not, and Forget drops a key at once.
func TestBudgetEvictsOldest(t *testing.T) {
	t.Parallel()
	l := NewBudget[string](0.1, 2)
	l.max = 3
	now := time.Now()
	for _, k := range []string{"a", "b", "c"} {
		l.Take(k, now)
		l.Take(k, now) // drained
	}
	l.Give("a", now) // a used again: b is now the oldest
	for _, c := range []struct{ key, gone string }{{"d", "b"}, {"e", "c"}, {"f", "a"}} {
		if ok, _ := l.Take(c.key, now); !ok {
			t.Fatalf("new key %s refused on a full limiter", c.key)
		}
		if _, kept := l.buckets[c.gone]; kept || len(l.buckets) != 3 {
			t.Fatalf("after %s: %s kept, %d keys; want it evicted and 3 keys", c.key, c.gone, len(l.buckets))
		}
	}
	if over, _ := l.Exhausted("b", now); over {
		t.Fatal("an evicted key is still exhausted")
	}
	l.Take("d", now)
	if over, _ := l.Exhausted("d", now); !over {
		t.Fatal("d is not exhausted after its burst")
	}
	l.Forget("d")
	if over, _ := l.Exhausted("d", now); over || len(l.buckets) != 2 {
		t.Fatalf("d forgotten: exhausted %v, %d keys", over, len(l.buckets))
	}
	// The list holds what the map holds, newest first.
	var order []string
	for b := l.newest; b != nil; b = b.older {
		order = append(order, b.key)
	}
	if strings.Join(order, ",") != "f,e" || l.oldest.key != "e" {
		t.Fatalf("use order %v, oldest %s", order, l.oldest.key)
	}
}

func TestClientNetwork(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ remote, want string }{
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1::/48"},
		{"[2001:db8:1:ffff::1]:443", "2001:db8:1::/48"}, // another /64 of the same /48
		{"203.0.113.7:5000", "none"},
		{"[::ffff:203.0.113.7]:5000", "none"},
		{"@", "none"},
	} {
		got := "none"
		if n, ok := ClientNetwork(ClientPrefix(&http.Request{RemoteAddr: c.remote})); ok {
			got = n.String()
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.remote, got, c.want)
		}
	}
}
