package httpx

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Read gate defaults: the console's and the API's reads share a small
// pool, so each tenant, and each caller (API token or operator) within
// it, may run only a few at once, and together they leave the pool
// readReserve connections for sessions, sign-ins and token lookups.
const (
	ReadsPerTenant = 3
	ReadsPerCaller = 2
	readReserve    = 2
	// readWait is how long a read waits for a slot before it is
	// answered 503.
	readWait = 500 * time.Millisecond
)

// ReadGate bounds concurrent reads per tenant, per caller and in all, so
// that one tenant's expensive searches cannot hold the read pool. A key's
// entry lives only while a read holds or awaits it.
type ReadGate struct {
	total chan struct{} // nil: no cap in all

	mu   sync.Mutex
	keys map[gateKey]*gateSlots
}

type gateKey struct {
	tenant, caller string // caller "": the tenant's own slots
}

type gateSlots struct {
	sem   chan struct{}
	users int // holders and waiters
}

// NewReadGate returns a gate for a read pool of poolSize connections; 0
// means the pool's size is unknown and only the per-tenant and per-caller
// caps apply.
func NewReadGate(poolSize int) *ReadGate {
	g := &ReadGate{keys: map[gateKey]*gateSlots{}}
	if poolSize > 0 {
		g.total = make(chan struct{}, max(1, poolSize-readReserve))
	}
	return g
}

// Acquire waits up to readWait for a slot of the caller, of its tenant
// and of the pool. It returns the release function, or false when none
// freed up in time or ctx ended.
func (g *ReadGate) Acquire(ctx context.Context, tenant, caller string) (func(), bool) {
	timer := time.NewTimer(readWait)
	defer timer.Stop()
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	// The narrowest first: a caller over its share waits without holding
	// a slot its tenant's other callers could use.
	for _, k := range []gateKey{{tenant, caller}, {tenant, ""}} {
		limit := ReadsPerCaller
		if k.caller == "" {
			limit = ReadsPerTenant
		}
		free, ok := g.take(ctx, timer.C, k, limit)
		if !ok {
			release()
			return nil, false
		}
		held = append(held, free)
	}
	if g.total != nil {
		select {
		case g.total <- struct{}{}:
			held = append(held, func() { <-g.total })
		case <-timer.C:
			release()
			return nil, false
		case <-ctx.Done():
			release()
			return nil, false
		}
	}
	return release, true
}

// take waits for one of k's limit slots until expired fires or ctx ends.
func (g *ReadGate) take(ctx context.Context, expired <-chan time.Time, k gateKey, limit int) (func(), bool) {
	g.mu.Lock()
	s, ok := g.keys[k]
	if !ok {
		s = &gateSlots{sem: make(chan struct{}, limit)}
		g.keys[k] = s
	}
	s.users++
	g.mu.Unlock()
	leave := func() {
		g.mu.Lock()
		if s.users--; s.users == 0 {
			delete(g.keys, k)
		}
		g.mu.Unlock()
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem; leave() }, true
	case <-expired:
	case <-ctx.Done():
	}
	leave()
	return nil, false
}

// ReadsBusy is the message of a read refused by the gate.
const ReadsBusy = "too many reads of this tenant or caller are running; retry after the Retry-After delay"

// GateReads runs GET and HEAD requests through g, keyed by what keys
// answers for the request; past the caps busy answers them, after
// Retry-After is set. Other methods pass: writes run on the ingest pool.
func GateReads(g *ReadGate, keys func(*http.Request) (tenant, caller string), busy http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				next.ServeHTTP(w, r)
				return
			}
			tenant, caller := keys(r)
			release, ok := g.Acquire(r.Context(), tenant, caller)
			if !ok {
				w.Header().Set("Retry-After", "1")
				busy(w, r)
				return
			}
			defer release()
			next.ServeHTTP(w, r)
		})
	}
}

// DefaultWriteTimeout stops each statement of a write that a console or
// API request starts.
const DefaultWriteTimeout = 10 * time.Second

// TimeWrites gives the writes of requests other than GET and HEAD a
// statement timeout of d (0: DefaultWriteTimeout).
func TimeWrites(d time.Duration) func(http.Handler) http.Handler {
	if d <= 0 {
		d = DefaultWriteTimeout
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				r = r.WithContext(domain.WithWriteTimeout(r.Context(), d))
			}
			next.ServeHTTP(w, r)
		})
	}
}
