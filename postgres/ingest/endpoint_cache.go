package ingest

import (
	"container/list"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// The endpoint cache spares each delivery the round trip of its endpoint
// lookup. It serves entries only while ListenForChanges holds a connection
// LISTENing for the notifications of migration 00015, which drop a
// tenant's entries on every node as soon as a change to its tenant,
// providers, secrets or scopes commits. Without that connection nothing is
// cached, so a notification missed while it was down can never leave a
// stale entry behind.
const (
	// endpointTTL is a backstop: no entry outlives it, notification or not.
	endpointTTL = 30 * time.Second
	// endpointMissTTL keeps "no such tenant or provider" briefly, so that
	// made-up names cost no query each, while a new one shows up soon even
	// on a node that missed nothing.
	endpointMissTTL = time.Second
	// The caps bound memory: the least recently used entries go first.
	// Misses have their own, so that a flood of made-up names cannot evict
	// the endpoints in use.
	endpointCacheSize  = 4096
	endpointMissesSize = 1024
)

type endpointKey struct{ tenant, provider string }

// endpointEntry is a cached lookup: an endpoint, or its ENOTFOUND error.
type endpointEntry struct {
	key     endpointKey
	p       domain.ProviderEndpoint
	err     error
	expires time.Time
}

// endpointCache is the Writer's cache of endpoints; its zero value caches
// nothing until its listener goes live. Cached endpoints are shared by
// every caller, which only reads them.
type endpointCache struct {
	mu   sync.Mutex
	live bool // the listener is LISTENing: only then are entries served and stored
	// gen moves on with every invalidation, so that a lookup which read the
	// database before one arrived is not stored after it.
	gen            uint64
	found, missing lru
	// invalidations counts the notifications handled, and pid is the
	// listener's backend (0 while it is down), for tests and logs.
	invalidations uint64
	pid           uint32

	listening atomic.Bool   // ListenForChanges is running
	retryMin  time.Duration // the first reconnection delay; tests lengthen it
}

// get returns the live entry of key, and the generation a lookup that
// misses must hand to put.
func (c *endpointCache) get(key endpointKey, now time.Time) (*endpointEntry, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live {
		return nil, c.gen
	}
	if e := c.found.get(key, now); e != nil {
		return e, c.gen
	}
	return c.missing.get(key, now), c.gen
}

// put stores the result of a lookup that began at generation gen, unless
// the cache went down or was invalidated since.
func (c *endpointCache) put(key endpointKey, gen uint64, p domain.ProviderEndpoint, err error, began time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || gen != c.gen {
		return
	}
	if err != nil {
		c.found.remove(key)
		c.missing.add(&endpointEntry{key: key, err: err, expires: began.Add(endpointMissTTL)}, endpointMissesSize)
		return
	}
	c.missing.remove(key)
	c.found.add(&endpointEntry{key: key, p: p, expires: began.Add(endpointTTL)}, endpointCacheSize)
}

// invalidate handles a notification: it drops the entries of the tenant
// whose id is payload, and every miss, since a miss does not know which
// tenant it would belong to. A payload that is not an id drops everything.
func (c *endpointCache) invalidate(payload string) {
	tenantID, err := strconv.ParseInt(payload, 10, 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.invalidations++
	c.missing.clear()
	if err != nil {
		c.found.clear()
		return
	}
	c.found.removeIf(func(e *endpointEntry) bool { return e.p.TenantID == tenantID })
}

// reset empties the cache and turns it on (live, the listener's backend
// pid) or off.
func (c *endpointCache) reset(live bool, pid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.live, c.pid = live, pid
	c.found.clear()
	c.missing.clear()
}

// state reports whether the cache is live, its listener's backend pid and
// how many notifications it has handled.
func (c *endpointCache) state() (live bool, pid uint32, invalidations uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live, c.pid, c.invalidations
}

// lru is a map of entries ordered by use, most recent first.
type lru struct {
	order list.List
	byKey map[endpointKey]*list.Element
}

// get returns key's entry if it has not expired, and marks it used.
func (l *lru) get(key endpointKey, now time.Time) *endpointEntry {
	el, ok := l.byKey[key]
	if !ok {
		return nil
	}
	e := el.Value.(*endpointEntry)
	if !now.Before(e.expires) {
		l.order.Remove(el)
		delete(l.byKey, key)
		return nil
	}
	l.order.MoveToFront(el)
	return e
}

// add stores e, evicting the least recently used entries beyond size.
func (l *lru) add(e *endpointEntry, size int) {
	if l.byKey == nil {
		l.byKey = map[endpointKey]*list.Element{}
	}
	if el, ok := l.byKey[e.key]; ok {
		el.Value = e
		l.order.MoveToFront(el)
		return
	}
	l.byKey[e.key] = l.order.PushFront(e)
	for l.order.Len() > size {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.byKey, oldest.Value.(*endpointEntry).key)
	}
}

func (l *lru) remove(key endpointKey) {
	if el, ok := l.byKey[key]; ok {
		l.order.Remove(el)
		delete(l.byKey, key)
	}
}

func (l *lru) removeIf(drop func(*endpointEntry) bool) {
	for el := l.order.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*endpointEntry); drop(e) {
			l.order.Remove(el)
			delete(l.byKey, e.key)
		}
		el = next
	}
}

func (l *lru) clear() {
	l.order.Init()
	clear(l.byKey)
}
