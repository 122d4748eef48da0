package hook

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// DefaultRefusalFlush is how often refused deliveries are written: the
// overview's counts trail by at most this plus one write.
const DefaultRefusalFlush = 2 * time.Second

// maxPendingSamples and maxPendingBodies bound the sampled deliveries held
// while the database cannot be written (past the bytes bound, a sample
// keeps its reason but not its body); the counts stay exact regardless.
const (
	maxPendingSamples = 1000
	maxPendingBodies  = 16 << 20
	// maxPendingOverloads bounds the (tenant, hour, reason) counts of 503s
	// for overload held until the next flush: the lookup gate counts a
	// tenant by the name in the URL, which a flood may make up.
	maxPendingOverloads = 4096
)

// refusalLog keeps refused deliveries in memory until the next flush, so a
// flood of forged requests costs no database write of its own: an exact
// count per provider and minute (the refusals alert's shortest window is
// a minute; the overview's counters add them up per hour), and at most
// one delivery per provider and second with its reason, for the console.
type refusalLog struct {
	store domain.IngestService
	log   *slog.Logger

	mu      sync.Mutex
	counts  map[refusalKey]int64
	samples []domain.Delivery
	bodies  int             // bytes of the samples' bodies
	sampled map[int64]int64 // provider id: the Unix second of its last sample
	// overloads counts the 503s for overload per tenant, hour and reason.
	overloads map[overloadKey]int64
}

type overloadKey struct {
	tenant, reason string
	hour           time.Time
}

type refusalKey struct {
	tenant, provider int64
	minute           time.Time
}

func newRefusalLog(store domain.IngestService, log *slog.Logger) *refusalLog {
	return &refusalLog{store: store, log: log, counts: map[refusalKey]int64{}, sampled: map[int64]int64{},
		overloads: map[overloadKey]int64{}}
}

// overload counts a 503 for overload of tenant for reason at at. Past
// maxPendingOverloads names a new one is not kept (/metrics counts it).
func (l *refusalLog) overload(tenant, reason string, at time.Time) {
	k := overloadKey{tenant: tenant, reason: reason, hour: at.UTC().Truncate(time.Hour)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.overloads[k]; ok || len(l.overloads) < maxPendingOverloads {
		l.overloads[k]++
	}
}

// add counts d and keeps it when its provider has no sample in the same
// second yet.
func (l *refusalLog) add(d domain.Delivery) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[refusalKey{d.TenantID, d.ProviderID, domain.RefusalMinute(d.ReceivedAt)}]++
	sec := d.ReceivedAt.Unix()
	if last, ok := l.sampled[d.ProviderID]; ok && last >= sec {
		return
	}
	l.sampled[d.ProviderID] = sec
	l.keep(d)
}

// keep adds a sample within the bounds; the caller holds l.mu.
func (l *refusalLog) keep(d domain.Delivery) {
	if len(l.samples) >= maxPendingSamples {
		return
	}
	if l.bodies+len(d.Body) > maxPendingBodies {
		d.Body = nil
	}
	l.bodies += len(d.Body)
	l.samples = append(l.samples, d)
}

// flush writes what was refused since the last flush: the refused
// deliveries in one round trip, the counts of 503s for overload in
// another. On failure it keeps what was not written for the next one.
func (l *refusalLog) flush(ctx context.Context) error {
	return errors.Join(l.flushRefusals(ctx), l.flushOverloads(ctx))
}

func (l *refusalLog) flushOverloads(ctx context.Context) error {
	l.mu.Lock()
	counts := l.overloads
	l.overloads = map[overloadKey]int64{}
	l.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	batch := make([]domain.OverloadCount, 0, len(counts))
	for k, n := range counts {
		batch = append(batch, domain.OverloadCount{TenantSlug: k.tenant, Hour: k.hour, Reason: k.reason, N: n})
	}
	err := l.store.LogOverloads(ctx, batch)
	if err != nil {
		l.mu.Lock()
		for k, n := range counts {
			l.overloads[k] += n
		}
		l.mu.Unlock()
	}
	return err
}

func (l *refusalLog) flushRefusals(ctx context.Context) error {
	l.mu.Lock()
	counts, samples := l.counts, l.samples
	l.counts, l.samples, l.bodies = map[refusalKey]int64{}, nil, 0
	now := time.Now().Unix()
	for p, sec := range l.sampled {
		if sec < now-1 { // a sample of that second can no longer come
			delete(l.sampled, p)
		}
	}
	l.mu.Unlock()
	if len(counts) == 0 && len(samples) == 0 {
		return nil
	}
	batch := make([]domain.RefusalCount, 0, len(counts))
	for k, n := range counts {
		batch = append(batch, domain.RefusalCount{TenantID: k.tenant, ProviderID: k.provider, Minute: k.minute, N: n})
	}
	err := l.store.LogRefusals(ctx, batch, samples)
	if err == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, n := range counts {
		l.counts[k] += n
	}
	newer := l.samples
	l.samples, l.bodies = nil, 0
	for _, d := range append(samples, newer...) {
		l.keep(d)
	}
	return err
}

// run flushes every interval until ctx ends.
func (l *refusalLog) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, every+5*time.Second)
			if err := l.flush(fctx); err != nil && ctx.Err() == nil {
				l.log.Warn("could not write refused deliveries; keeping them for the next try", "err", err)
			}
			cancel()
		}
	}
}
