package hook

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestGateWaitsForASlowLookup: a short queue of a tenant's deliveries
// waits for a lookup that takes longer than the 250 ms the gate once
// allowed, and every one of them gets its slot; none is refused.
func TestGateWaitsForASlowLookup(t *testing.T) {
	t.Parallel()
	g := newTenantGate(2) // one slot per tenant
	release, ok := g.acquire(context.Background(), "acme")
	if !ok {
		t.Fatal("the first lookup was refused")
	}
	const waiters = 16
	var refused sync.WaitGroup
	results := make(chan bool, waiters)
	for range waiters {
		refused.Go(func() {
			rel, ok := g.acquire(context.Background(), "acme")
			if ok {
				time.Sleep(time.Millisecond) // a lookup from the cache
				rel()
			}
			results <- ok
		})
	}
	time.Sleep(500 * time.Millisecond) // the slow lookup
	release()
	refused.Wait()
	close(results)
	for ok := range results {
		if !ok {
			t.Fatal("a delivery of a short queue was refused while a slow lookup held the slot")
		}
	}
	if len(g.tenants) != 0 {
		t.Errorf("%d tenants left in the gate after every call returned", len(g.tenants))
	}
}

// TestGateRefusesAFloodAtOnce: past gateWaiters waiting deliveries of a
// tenant, the next is refused at once, not after waiting.
func TestGateRefusesAFloodAtOnce(t *testing.T) {
	t.Parallel()
	g := newTenantGate(2)
	release, _ := g.acquire(context.Background(), "acme")
	ctx, cancel := context.WithCancel(context.Background())
	var waiting sync.WaitGroup
	for range gateWaiters {
		waiting.Go(func() {
			if rel, ok := g.acquire(ctx, "acme"); ok {
				rel()
			}
		})
	}
	for {
		g.mu.Lock()
		n := g.tenants["acme"].waiting
		g.mu.Unlock()
		if n == gateWaiters {
			break
		}
		time.Sleep(time.Millisecond)
	}
	began := time.Now()
	if _, ok := g.acquire(context.Background(), "acme"); ok {
		t.Fatal("a delivery past the waiters' bound got a slot")
	}
	if took := time.Since(began); took > gateWait/2 {
		t.Errorf("the refusal took %s: it waited", took)
	}
	// Another tenant is not held up by acme's flood.
	if rel, ok := g.acquire(context.Background(), "globex"); !ok {
		t.Error("another tenant was refused")
	} else {
		rel()
	}
	cancel()
	release()
	waiting.Wait()
}
