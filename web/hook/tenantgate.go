package hook

import (
	"context"
	"sync"
	"time"
)

// A delivery waits for one of its tenant's lookup slots for as long as a
// slow lookup may take (gateWait, half of the delivery's budget: the rest
// is for its write), unless gateWaiters of the tenant's deliveries already
// wait on this node: then it is refused at once (503), as a flood is. So a
// short burst that meets a slow lookup (a cold cache, a lock on providers,
// a checkpoint) waits for it instead of being refused.
const (
	gateWait    = ingestBudget / 2
	gateWaiters = 256
)

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
	sem     chan struct{}
	users   int // holders and waiters
	waiting int // waiters
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

// acquire takes one of tenant's slots, waiting up to gateWait unless
// gateWaiters already wait. It returns the release function, or false
// when it was refused, no slot freed up in time, or ctx ended.
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

	leave := func(waited bool) {
		g.mu.Lock()
		if waited {
			ts.waiting--
		}
		if ts.users--; ts.users == 0 {
			delete(g.tenants, tenant)
		}
		g.mu.Unlock()
	}
	release := func() { <-ts.sem; leave(false) }
	select {
	case ts.sem <- struct{}{}:
		return release, true
	default:
	}
	g.mu.Lock()
	full := ts.waiting >= gateWaiters
	if !full {
		ts.waiting++
	}
	g.mu.Unlock()
	if full {
		leave(false)
		return nil, false
	}
	timer := time.NewTimer(gateWait)
	defer timer.Stop()
	select {
	case ts.sem <- struct{}{}:
		g.mu.Lock()
		ts.waiting--
		g.mu.Unlock()
		return release, true
	case <-timer.C:
	case <-ctx.Done():
	}
	leave(true)
	return nil, false
}
