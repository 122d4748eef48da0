// Package outbound is the sender: it pushes each destination's changes
// and alert events, through the destination's kind (internal/sink), from
// the node that holds the destination's lease (stream.Outbox), passing
// over those its filter does not match and sending its transform's data
// (internal/shape). A record's
// changes go one at a time, in position order, each retried until
// answered 2xx; changes of different records go in parallel, up to the
// destination's max_in_flight.
package outbound

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
	"github.com/tidemark/tidemark/internal/sink"
)

// Defaults of Options.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultLeaseEvery = 2 * time.Second
	DefaultPoll       = 100 * time.Millisecond
	DefaultMaxLeases  = 64
	DefaultDrain      = 5 * time.Second
)

// Options configure a Sender; zero fields take the defaults.
type Options struct {
	// Owner names this node in the leases it holds: NodeID() by default.
	Owner string
	// LeaseTTL is how long a lease lasts unless renewed; renewed every
	// LeaseEvery. A send starts only while more than half the ttl is left,
	// and is cut off when the lease would end, so no two nodes send a
	// destination's changes at once.
	LeaseTTL, LeaseEvery time.Duration
	// Poll is how often a destination looks for new and due changes when
	// nothing else wakes it: commit-to-send latency is about this.
	Poll time.Duration
	// Timeout bounds the wait for an answer (stream.DestinationTimeout).
	Timeout time.Duration
	// Drain is how long a stopping worker lets its sends in flight finish
	// (default 5 s): each answer it waits for is recorded, and not sent
	// again by the node that takes the destination next.
	Drain time.Duration
	// MaxLeases is how many destinations this node sends at most, and
	// TenantShare how many of one tenant's (default a quarter of MaxLeases),
	// so that one tenant's destinations never take every slot.
	MaxLeases, TenantShare int
	// Idle is how long a destination has nothing to send before its
	// worker gives the lease back (default 10 polls).
	Idle time.Duration
	Log  *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Owner == "" {
		o.Owner = NodeID()
	}
	o.LeaseTTL = cmpOr(o.LeaseTTL, DefaultLeaseTTL)
	o.LeaseEvery = cmpOr(o.LeaseEvery, DefaultLeaseEvery)
	o.Poll = cmpOr(o.Poll, DefaultPoll)
	o.Timeout = cmpOr(o.Timeout, stream.DestinationTimeout)
	o.Drain = cmpOr(o.Drain, DefaultDrain)
	if o.MaxLeases == 0 {
		o.MaxLeases = DefaultMaxLeases
	}
	if o.TenantShare == 0 {
		o.TenantShare = max(1, o.MaxLeases/4)
	}
	o.Idle = cmpOr(o.Idle, 10*o.Poll)
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NodeID names this process uniquely among the nodes of a database:
// hostname, pid and a random part (a pid repeats across containers).
func NodeID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Sender sends the changes of the destinations it leases.
type Sender struct {
	store  stream.Outbox
	o      Options
	sinks  *sink.Conns
	shapes shape.Cache // the destinations' filters and transforms, compiled once
}

// New returns a Sender on store.
func New(store stream.Outbox, o Options) *Sender {
	o = o.withDefaults()
	// A connection unused for a lease's time is closed; there are at most
	// as many of a kind as the destinations a node leases.
	return &Sender{store: store, o: o,
		sinks: sink.Open(sink.Options{Timeout: o.Timeout, Idle: o.LeaseTTL, MaxConns: o.MaxLeases, Log: o.Log})}
}

type destKey struct{ tenantID, id int64 }

// Run renews its leases every LeaseEvery and, every Poll while it has a
// free slot, takes destinations with something to send; it runs a worker
// for each one held, until ctx ends; then it stops the workers and
// releases the leases, so that another node takes them at once. A worker
// whose destination has nothing to send gives its lease back: one node
// query every Poll finds work for every idle destination, instead of each
// destination polling for its own.
func (s *Sender) Run(ctx context.Context) error {
	workers := map[destKey]*worker{}
	defer s.sinks.Close()
	defer func() {
		var held []stream.LeasedDestination
		var draining sync.WaitGroup
		for _, w := range workers {
			draining.Go(func() { w.stop(s.o.Drain) }) // together: each for up to Drain
			held = append(held, w.destination())
		}
		draining.Wait()
		if len(held) == 0 {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.store.ReleaseDestinations(rctx, s.o.Owner, held); err != nil {
			s.o.Log.Warn("destination sender: could not release leases; they run out", "err", err, "ttl", s.o.LeaseTTL)
		}
	}()
	var renewed time.Time
	for {
		if time.Since(renewed) >= s.o.LeaseEvery {
			renewed = time.Now()
			s.renew(ctx, workers)
		}
		s.take(ctx, workers)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.o.Poll):
		}
	}
}

// renew renews the leases: a worker starts for a destination held with
// none, and stops for one no longer held. When the leases cannot be renewed the workers go on until their
// leases would end, and then send nothing.
func (s *Sender) renew(ctx context.Context, workers map[destKey]*worker) {
	start := time.Now()
	leased, err := s.store.RenewDestinations(ctx, s.o.Owner, s.o.LeaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Error("destination sender: renew leases", "err", err)
		}
		return
	}
	until := start.Add(s.o.LeaseTTL) // no later than the database's lease_until
	held := map[destKey]bool{}
	for _, d := range leased {
		k := destKey{d.TenantID, d.ID}
		held[k] = true
		if w := workers[k]; w != nil && !w.exited() {
			w.renew(d, until)
			continue
		}
		// Still this node's with no worker: one that stopped as failing,
		// since resumed, or one taken before this node restarted.
		workers[k] = startWorker(ctx, s, d, until)
	}
	for k, w := range workers {
		if !held[k] && !w.exited() {
			w.stop(0) // at once: the loop renews the others
			delete(workers, k)
			s.o.Log.Info("destination sender: stopped; lease not renewed (paused, failing, deleted or taken)",
				"tenant_id", k.tenantID, "destination_id", k.id)
		}
	}
}

// take forgets the workers that exited (idle or failing) and, while fewer
// than MaxLeases run, takes destinations with something to send, at most
// TenantShare of one tenant's, and starts a worker for each.
func (s *Sender) take(ctx context.Context, workers map[destKey]*worker) {
	held := map[int64]int{}
	for k, w := range workers {
		if w.exited() {
			delete(workers, k)
			continue
		}
		held[k.tenantID]++
	}
	start := time.Now()
	taken, err := s.store.TakeDestinations(ctx, s.o.Owner, s.o.LeaseTTL, s.o.MaxLeases-len(workers), s.o.TenantShare, held)
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Error("destination sender: take leases", "err", err)
		}
		return
	}
	for _, d := range taken {
		workers[destKey{d.TenantID, d.ID}] = startWorker(ctx, s, d, start.Add(s.o.LeaseTTL))
		s.o.Log.Debug("destination sender: sending", "tenant_id", d.TenantID, "destination_id", d.ID)
	}
}

// sync.Mutex guards what the lease loop renews in a worker.
type leaseState struct {
	mu    sync.Mutex
	d     stream.LeasedDestination
	until time.Time
}

func (l *leaseState) get() (stream.LeasedDestination, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.d, l.until
}

func (l *leaseState) set(d stream.LeasedDestination, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d, l.until = d, until
}

// setSecrets replaces the secrets that sign, which a Step read, between
// the lease's renewals.
func (l *leaseState) setSecrets(secrets []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d.Secrets = secrets
}
