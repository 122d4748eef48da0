package replay

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// ManualPerMinute is how many replays by hand a tenant may make a minute
// on one node: each one writes a delivery and its events, so an operator
// or a token cannot fill the disk with them.
const ManualPerMinute = 30

// LimitedError is a replay refused by the tenant's budget; Wait is when
// the next one is allowed (the answer's Retry-After).
type LimitedError struct{ Wait time.Duration }

func (e *LimitedError) Error() string {
	return fmt.Sprintf("too many replays in this workspace: at most %d a minute; retry in %d s",
		ManualPerMinute, RetryAfter(e.Wait))
}

// RetryAfter is wait in whole seconds, at least 1.
func RetryAfter(wait time.Duration) int { return max(1, int(math.Ceil(wait.Seconds()))) }

// budgets is a token bucket per tenant, in memory: ManualPerMinute at
// once, refilled evenly over a minute.
type budgets struct {
	mu      sync.Mutex
	tenants map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take spends one replay of tenant at now, or says how long to wait.
func (b *budgets) take(tenant string, now time.Time) (time.Duration, bool) {
	const perSecond = ManualPerMinute / 60.0
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tenants == nil {
		b.tenants = map[string]*bucket{}
	}
	k := b.tenants[tenant]
	if k == nil {
		k = &bucket{tokens: ManualPerMinute, at: now}
		b.tenants[tenant] = k
	}
	k.tokens = min(ManualPerMinute, k.tokens+now.Sub(k.at).Seconds()*perSecond)
	k.at = now
	if k.tokens < 1 {
		return time.Duration((1 - k.tokens) / perSecond * float64(time.Second)), false
	}
	k.tokens--
	if len(b.tenants) > 10000 {
		// Full buckets carry nothing: forget them.
		for id, o := range b.tenants {
			if o.tokens+now.Sub(o.at).Seconds()*perSecond >= ManualPerMinute {
				delete(b.tenants, id)
			}
		}
	}
	return 0, true
}
