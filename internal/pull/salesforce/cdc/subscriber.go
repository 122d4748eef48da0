// Package cdc subscribes to the Change Data Capture streams of Salesforce
// providers (docs/contract/cdc.md) on every serve node: one subscriber
// per stream across all nodes, held by a lease in the database; each
// change event is written as a delivery whose source is cdc, through the
// ingest of every delivery, in the transaction that moves the stream's
// replay id (IngestCDC), so that a crash or a take-over neither skips nor
// repeats one. Gap and overflow events, and a replay id Salesforce no
// longer knows, are repaired by backfill (repair.go).
package cdc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/salesforce"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
	"github.com/tidemark/tidemark/internal/supervisor"
)

// DefaultInterval is serve's --cdc-interval: how often a node looks for
// streams turned on that no node holds.
const DefaultInterval = 10 * time.Second

const (
	// DefaultAllocationInterval is how often the org's delivery
	// allocation is read: its use is over a rolling 24 hours.
	DefaultAllocationInterval = 15 * time.Minute
	// DefaultLeaseTTL is how long a node holds a stream without renewing
	// it: a node that died gives it up after this.
	DefaultLeaseTTL = time.Minute
	// The wait before reading a failed stream again doubles from
	// minBackoff up to maxBackoff; a session that wrote events starts
	// again from minBackoff.
	minBackoff = time.Second
	maxBackoff = 2 * time.Minute
	// ingestTimeout bounds the write of one change event's delivery.
	ingestTimeout = 30 * time.Second
)

// Store is what the subscriber needs of storage.
type Store interface {
	domain.IngestService
	domain.CDCService
	backfill.FieldStore
	// APICredentials are the provider's connected app credentials, with
	// which both the Pub/Sub API and the backfill of a repair sign in.
	APICredentials(ctx context.Context, tenantID, providerID int64) (pull.Credentials, bool, error)
}

// Subscriber follows the streams that are on. Several nodes may run one
// on one database: a stream's lease keeps it to one of them, and the
// replay id's compare-and-set makes an event written twice impossible.
type Subscriber struct {
	Store Store
	Log   *slog.Logger
	// Holder names this node's leases; New sets a fresh one.
	Holder string
	// Every is how often streams without a subscriber are looked for.
	Every time.Duration
	// LeaseTTL is how long a lease lasts unrenewed; it is renewed every
	// third of it.
	LeaseTTL time.Duration
	// AllocationEvery is how often a subscribed stream's org allocation
	// is read (and once as it subscribes).
	AllocationEvery time.Duration
}

// New is the subscriber of a node.
func New(store Store, log *slog.Logger, every time.Duration) *Subscriber {
	return &Subscriber{Store: store, Log: log, Holder: uuid.NewString(), Every: every, LeaseTTL: DefaultLeaseTTL,
		AllocationEvery: DefaultAllocationInterval}
}

// Service runs s until the node stops.
func Service(s *Subscriber) supervisor.Service { return supervisor.Func("cdc subscriber", s.Run) }

// actor is who the subscriber's audit entries name.
var actor = domain.Actor{Kind: domain.ActorCLI, Name: "cdc subscriber"}

// Run looks for streams every s.Every and follows each it can lease, one
// goroutine per stream, until ctx ends; then it waits for them to give
// their leases back.
func (s *Subscriber) Run(ctx context.Context) error {
	ctx = domain.WithActor(ctx, actor)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		following = map[[2]int64]bool{}
	)
	defer wg.Wait()
	for {
		refs, err := s.Store.EnabledCDCStreams(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Error("cdc: could not list the streams", "err", err)
		}
		for _, ref := range refs {
			key := [2]int64{ref.TenantID, ref.ProviderID}
			mu.Lock()
			busy := following[key]
			following[key] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(following, key)
					mu.Unlock()
				}()
				s.follow(ctx, ref)
			}()
		}
		if !sleep(ctx, s.Every) {
			return nil
		}
	}
}

// errLeaseLost ends a session whose lease another node took or that was
// turned off.
var errLeaseLost = errors.New("the stream's lease was lost: it was turned off, or another node holds it")

// follow reads the stream while this node holds its lease: from the
// committed replay id, again after each failure with backoff.
func (s *Subscriber) follow(ctx context.Context, ref domain.CDCStreamRef) {
	log := s.Log.With("tenant", ref.TenantSlug, "provider", ref.Provider)
	st, ok, err := s.Store.LeaseCDC(ctx, ref.TenantID, ref.ProviderID, s.Holder, s.LeaseTTL)
	if err != nil || !ok {
		if err != nil && ctx.Err() == nil {
			log.Warn("cdc: could not lease a stream", "err", err)
		}
		return
	}
	log.Info("cdc: subscribing", "channel", st.Channel, "holder", s.Holder)
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.Store.ReleaseCDC(ctx, ref.TenantID, ref.ProviderID, s.Holder); err != nil {
			log.Warn("cdc: could not release a lease; it lapses", "err", err)
		}
	}()
	wait := minBackoff
	for {
		wrote, err := s.session(ctx, ref, st, log)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errLeaseLost), errors.Is(err, domain.ErrCDCMoved):
			log.Info("cdc: stopped following a stream", "reason", err)
			return
		case errors.Is(err, pubsub.ErrReplayIDCorrupted):
			err = s.reset(ctx, ref, st, log) // then subscribe again at once
		}
		if wrote > 0 {
			wait = minBackoff
		}
		if err != nil {
			s.recordError(ctx, ref, err, log)
			if !sleep(ctx, wait) {
				return
			}
			wait = min(2*wait, maxBackoff)
		}
		if st, ok, err = s.Store.LeaseCDC(ctx, ref.TenantID, ref.ProviderID, s.Holder, s.LeaseTTL); err != nil || !ok {
			if err != nil && ctx.Err() == nil {
				log.Warn("cdc: could not renew a lease; it lapses", "err", err)
			}
			return
		}
	}
}

// recordError keeps a session's failure on the stream, for its page.
func (s *Subscriber) recordError(ctx context.Context, ref domain.CDCStreamRef, err error, log *slog.Logger) {
	if err == nil {
		return
	}
	log.Warn("cdc: reading the stream failed; reading again after a pause", "err", err)
	if rerr := s.Store.RecordCDCError(ctx, ref.TenantID, ref.ProviderID, err.Error()); rerr != nil && ctx.Err() == nil {
		log.Warn("cdc: could not keep the stream's error", "err", rerr)
	}
}

// keepLease renews the lease every third of its life until ctx ends, and
// ends the session (cancel) once another node holds it or it was turned
// off. A renewal that fails on the database is tried again at the next
// tick: the lease outlives two of them.
func (s *Subscriber) keepLease(ctx context.Context, cancel context.CancelCauseFunc, ref domain.CDCStreamRef) {
	tick := time.NewTicker(s.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, ok, err := s.Store.LeaseCDC(ctx, ref.TenantID, ref.ProviderID, s.Holder, s.LeaseTTL)
		if err == nil && !ok {
			cancel(errLeaseLost)
			return
		}
	}
}

// watchAllocation reads the org's delivery allocation now and every
// s.AllocationEvery until ctx ends, and keeps it on the stream. A failed
// read is logged and tried at the next tick: the stream reads on.
func (s *Subscriber) watchAllocation(ctx context.Context, ref domain.CDCStreamRef, src *salesforce.Source, log *slog.Logger) {
	for {
		a, err := src.DeliveryAllocation(ctx)
		if err == nil {
			err = s.Store.RecordCDCAllocation(ctx, ref.TenantID, ref.ProviderID, a)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("cdc: could not read the org's delivery allocation", "err", err)
		}
		if !sleep(ctx, s.AllocationEvery) {
			return
		}
	}
}

// sleep waits d unless ctx ends first; false when it did.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
