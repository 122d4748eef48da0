package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// TestEndpointCacheBounds checks the cache without a database: entries
// expire, the least recently used go beyond the cap, a notification drops
// its tenant and every miss, and a lookup that raced a notification is not
// stored.
func TestEndpointCacheBounds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	found := func(tenantID int64) domain.ProviderEndpoint {
		return domain.ProviderEndpoint{Provider: domain.Provider{TenantID: tenantID}}
	}
	key := func(i int) endpointKey { return endpointKey{fmt.Sprint("t", i), "p"} }
	miss := pg.NotFound("no such endpoint")
	t.Run("off until live", func(t *testing.T) {
		var c endpointCache
		_, gen := c.get(key(1), now)
		c.put(key(1), gen, found(1), nil, now)
		c.reset(true, 1)
		if e, _ := c.get(key(1), now); e != nil {
			t.Fatal("stored while off")
		}
	})
	t.Run("expiry", func(t *testing.T) {
		var c endpointCache
		c.reset(true, 1)
		_, gen := c.get(key(1), now)
		c.put(key(1), gen, found(1), nil, now)
		c.put(key(2), gen, domain.ProviderEndpoint{}, miss, now)
		if e, _ := c.get(key(1), now.Add(endpointTTL-time.Millisecond)); e == nil {
			t.Fatal("entry gone before its TTL")
		}
		if e, _ := c.get(key(1), now.Add(endpointTTL)); e != nil {
			t.Fatal("entry served past its TTL")
		}
		if e, _ := c.get(key(2), now.Add(endpointMissTTL-time.Millisecond)); e == nil || e.err != miss {
			t.Fatalf("miss %+v before its TTL", e)
		}
		if e, _ := c.get(key(2), now.Add(endpointMissTTL)); e != nil {
			t.Fatal("miss served past its TTL")
		}
	})
	t.Run("caps", func(t *testing.T) {
		var c endpointCache
		c.reset(true, 1)
		for i := range endpointCacheSize + 10 {
			_, gen := c.get(key(i), now)
			c.put(key(i), gen, found(int64(i)), nil, now)
			if i == endpointCacheSize-1 {
				c.get(key(0), now) // used again: kept
			}
		}
		for i := range endpointMissesSize + 10 {
			k := endpointKey{"missing", fmt.Sprint(i)}
			_, gen := c.get(k, now)
			c.put(k, gen, domain.ProviderEndpoint{}, miss, now)
		}
		if c.found.order.Len() != endpointCacheSize || len(c.found.byKey) != endpointCacheSize ||
			c.missing.order.Len() != endpointMissesSize {
			t.Fatalf("%d found, %d misses; want the caps %d and %d", c.found.order.Len(), c.missing.order.Len(),
				endpointCacheSize, endpointMissesSize)
		}
		if e, _ := c.get(key(0), now); e == nil {
			t.Error("the recently used entry was evicted")
		}
		if e, _ := c.get(key(1), now); e != nil {
			t.Error("the least recently used entry was kept")
		}
	})
	t.Run("invalidate", func(t *testing.T) {
		var c endpointCache
		c.reset(true, 1)
		_, gen := c.get(key(1), now)
		c.put(key(1), gen, found(1), nil, now)
		c.put(key(2), gen, found(2), nil, now)
		c.put(key(3), gen, domain.ProviderEndpoint{}, miss, now)
		_, raced := c.get(key(4), now)
		c.invalidate("1")
		c.put(key(4), raced, found(4), nil, now)
		for i, want := range map[int]bool{1: false, 2: true, 3: false, 4: false} {
			if e, _ := c.get(key(i), now); (e != nil) != want {
				t.Errorf("entry %d cached: %v, want %v", i, e != nil, want)
			}
		}
		c.invalidate("not an id")
		if e, _ := c.get(key(2), now); e != nil {
			t.Error("a payload that is no tenant id kept entries")
		}
	})
}
