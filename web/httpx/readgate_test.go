package httpx_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/web/httpx"
)

// TestReadGate: per caller, per tenant and in all (the pool less its
// reserve for sessions), concurrent reads are capped; a refused read holds
// nothing, and released slots serve the next.
func TestReadGate(t *testing.T) {
	t.Parallel()
	g := httpx.NewReadGate(8) // 6 for reads, 2 kept for sessions and sign-ins
	ctx := context.Background()
	var held []func()
	take := func(tenant, caller string) bool {
		release, ok := g.Acquire(ctx, tenant, caller)
		if ok {
			held = append(held, release)
		}
		return ok
	}
	for i, c := range []struct {
		tenant, caller string
		want           bool
	}{
		{"a", "t1", true}, {"a", "t1", true}, {"a", "t1", false}, // 2 per caller
		{"a", "t2", true}, {"a", "t3", false}, // 3 per tenant
		{"b", "t1", true}, {"b", "t2", true}, {"b", "t3", true}, // another tenant's own
		{"c", "t1", false}, // 6 in all: the rest of the pool is kept
	} {
		if got := take(c.tenant, c.caller); got != c.want {
			t.Fatalf("read %d (%s/%s): admitted %v, want %v", i+1, c.tenant, c.caller, got, c.want)
		}
	}
	var wg sync.WaitGroup
	for _, release := range held {
		wg.Go(release)
	}
	wg.Wait()
	for i := range 3 {
		if !take("c", "t"+string(rune('1'+i))) {
			t.Fatalf("after the releases, read %d of c refused", i+1)
		}
	}
}
