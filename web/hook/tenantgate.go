package hook

import (
	"context"
	"sync"
	"time"
)

// tenantWait is how long a delivery waits for one of its tenant's
// connections before it is answered 503.
const tenantWait = 250 * time.Millisecond

// tenantGate lets each tenant run at most limit endpoint lookups at once,
// so one tenant's flood holds at most that share of the ingest pool (a
// lookup served from the cache holds its slot for no time) and the others
// keep the rest. (Writes take one connection per
// tenant: its group committer's.) A tenant's entry lives only
// while a call holds or awaits it, so memory follows concurrency, not the
// number of tenants (or of made-up tenant names).
type tenantGate struct {
	limit int // 0: no cap

	mu      sync.Mutex
	tenants map[string]*tenantSlots
}

type tenantSlots struct {
	sem   chan struct{}
	users int // holders and waiters
}

// newTenantGate caps each tenant at half of an ingest pool of poolSize
// connections (at least one); poolSize 0 means no cap.
func newTenantGate(poolSize int) *tenantGate {
	g := &tenantGate{tenants: map[string]*tenantSlots{}}
	if poolSize > 0 {
		g.limit = max(1, poolSize/2)
	}
	return g
}

// acquire waits up to tenantWait for one of tenant's slots. It returns the
// release function, or false when none freed up in time or ctx ended.
func (g *tenantGate) acquire(ctx context.Context, tenant string) (func(), bool) {
	if g.limit == 0 {
		return func() {}, true
	}
	g.mu.Lock()
	ts, ok := g.tenants[tenant]
	if !ok {
		ts = &tenantSlots{sem: make(chan struct{}, g.limit)}
		g.tenants[tenant] = ts
	}
	ts.users++
	g.mu.Unlock()

	leave := func() {
		g.mu.Lock()
		if ts.users--; ts.users == 0 {
			delete(g.tenants, tenant)
		}
		g.mu.Unlock()
	}
	select {
	case ts.sem <- struct{}{}:
		return func() { <-ts.sem; leave() }, true
	default:
	}
	timer := time.NewTimer(tenantWait)
	defer timer.Stop()
	select {
	case ts.sem <- struct{}{}:
		return func() { <-ts.sem; leave() }, true
	case <-timer.C:
	case <-ctx.Done():
	}
	leave()
	return nil, false
}
