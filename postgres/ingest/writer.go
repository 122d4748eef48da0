// Package ingest is Tidemark's write path: a delivery's endpoint (cached
// while a listener keeps it current), its events written by the tenant's
// group committer in rounds of set-based statements, and the refusals
// logged in batches. A static reader follows Ingest -> commit (writer.go,
// committer.go) -> plan (plan.go) -> exec (exec.go); every statement of a
// transaction is in the registry of statements.go.
//
// The package follows postgres' rule for statements: each is a
// package-level constant ending in SQL, or a pg.Named variable of one, with
// @name parameters.
package ingest

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// defaultCounterShards is how many rows share one (tenant, provider, hour,
// outcome) count. Concurrent deliveries pick a shard at random, so a burst
// on one tenant spreads its counter updates instead of queueing on one row
// lock held until commit (BenchmarkCounterShards measures the difference).
const defaultCounterShards = 16

// DefaultCounterShards is defaultCounterShards, for the readers of the
// counters' tests and benchmarks.
const DefaultCounterShards = defaultCounterShards

// Writer writes deliveries and serves their endpoints.
type Writer struct {
	pool    *pgxpool.Pool
	secrets *pg.Secrets // opens provider secrets and logs those it cannot
	log     *slog.Logger

	// endpoints caches Endpoint while ListenForChanges runs.
	endpoints endpointCache

	counterShards int
	groups        groupQueues   // deliveries waiting for their lane's group committer
	lanes         int           // lanes the tenants are spread over (lanes.go)
	laneLockWait  time.Duration // bound of a lane's group's lock waits (committer.go)
	maxQueued     int           // deliveries one tenant may have waiting

	citus atomic.Int32 // whether the database has Citus (lanes.go)

	// beforeCommitSQL, when set by a test, is a statement appended to every
	// ingest transaction after all of its work and before it commits: an
	// error injected there, or a lock wait that holds the transaction open.
	beforeCommitSQL string
	// withoutChanges, set by a benchmark, leaves the changes statement out.
	withoutChanges bool
}

// New returns a Writer on pools' write pool that opens provider secrets
// with secrets and logs what fails no request to log.
func New(pools pg.Pools, secrets *pg.Secrets, log *slog.Logger) *Writer {
	return &Writer{pool: pools.Write, secrets: secrets, log: log, counterShards: defaultCounterShards, maxQueued: defaultMaxQueued,
		lanes: defaultLanes(pools.Write.Config().MaxConns), laneLockWait: defaultLaneLockWait}
}

// mode says how a delivery's transaction is committed.
type mode int

const (
	grouped mode = iota // in its tenant's next group (committer.go)
	alone               // in a transaction of its own: each delivery of a group that failed
	replay              // alone in an explicit transaction that runs then before it commits
)

// beforeCommit runs in a replay's transaction, once its outcomes are known.
type beforeCommit func(ctx context.Context, tx pgx.Tx, results []domain.Result) error

// ensureScopeSQL creates a scope first used, with its defaults.
var ensureScopeSQL = pg.Named(`
INSERT INTO scopes (tenant_id, provider_id, object_type, action) VALUES (@tenant_id, @provider_id, @object_type, @action)
ON CONFLICT DO NOTHING`)

// Ingest implements domain.IngestService. All statements of a delivery go
// to PostgreSQL as one pipelined batch, which the extended protocol runs as
// one implicit transaction: an error anywhere rolls back everything before
// it, and a delivery costs one round trip whatever its number of events. A
// transaction that loses a deadlock (possible between batches touching the
// same records in opposite orders) is run again.
//
// Events over domain's limits are rejected first. Should PostgreSQL still
// refuse an event with a program-limit error (class 54: an index row or a
// statement too large), that event is found and rejected, and the rest of
// the delivery is processed: a signed delivery is never failed, and retried
// by its provider for days, for one event the database cannot hold.
func (w *Writer) Ingest(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	return w.write(ctx, grouped, d, p, events, nil)
}

// Replay writes a replayed delivery as Ingest writes a delivery (limits,
// scopes, PostgreSQL's limits, lost deadlocks), but alone in an explicit
// transaction that runs then with the outcomes before it commits.
func (w *Writer) Replay(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event,
	then func(ctx context.Context, tx pgx.Tx, results []domain.Result) error) ([]domain.Result, error) {
	return w.write(ctx, replay, d, p, events, then)
}

// write is the one path of every delivery: limits, scopes, then its
// transaction committed by m, again after a lost deadlock, and again
// without the events PostgreSQL refuses.
func (w *Writer) write(ctx context.Context, m mode, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, then beforeCommit) ([]domain.Result, error) {
	if err := w.distributed(ctx); err != nil {
		return nil, err
	}
	events = slices.Clone(events)
	for i := range events {
		events[i] = domain.ApplyLimits(events[i])
	}
	if err := w.ensureScopes(ctx, p, events); err != nil {
		return nil, err
	}
	results, err := w.commitRetrying(ctx, m, d, p, events, then)
	if _, refusedOne := programLimit(err); refusedOne {
		if err = w.rejectOffenders(ctx, d, p, events); err == nil {
			results, err = w.commitRetrying(ctx, m, d, p, events, then)
		}
	}
	if why, refusedAll := programLimit(err); refusedAll {
		// Refused together but never alone: reject them all.
		for i := range events {
			events[i] = refused(events[i], why)
		}
		results, err = w.commitRetrying(ctx, m, d, p, events, then)
	}
	return results, pg.Translate(err)
}

// commitRetrying commits the delivery's transaction, again after a lost
// deadlock or serialization race, three attempts in all.
func (w *Writer) commitRetrying(ctx context.Context, m mode, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, then beforeCommit) ([]domain.Result, error) {
	for attempt := 1; ; attempt++ {
		results, err := w.commit(ctx, m, d, p, events, then)
		if err != nil && pg.Retryable(err) && attempt < 3 {
			continue
		}
		return results, err
	}
}

// commit writes the statements of one delivery in one transaction, as m
// says.
func (w *Writer) commit(ctx context.Context, m mode, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, then beforeCommit) ([]domain.Result, error) {
	switch m {
	case grouped:
		return w.commitGrouped(ctx, d, p, events)
	case replay:
		return w.commitReplay(ctx, d, p, events, then)
	default:
		return w.commitAlone(ctx, d, p, events)
	}
}

// commitAlone writes one delivery in a transaction of its own, bounded by
// ctx's deadline in the database (bounds.go).
func (w *Writer) commitAlone(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, has := ctx.Deadline()
	acquire, send, cancel, statement := boundedWrite(deadline, has)
	defer cancel()
	batch := &pgx.Batch{}
	results := w.queueDelivery(batch, d, p, events, rand.IntN(w.counterShards), bounds{statement: statement})
	if w.beforeCommitSQL != "" {
		batch.Queue(w.beforeCommitSQL)
	}
	_, span := startBatchSpan(ctx, batch.Len())
	err := sendBounded(acquire, send, w.pool, batch)
	endBatchSpan(span, err)
	return results, err
}

// commitReplay writes a replay's statements as one pipelined batch inside
// a transaction, then runs then with the outcomes before committing.
func (w *Writer) commitReplay(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, then beforeCommit) ([]domain.Result, error) {
	var results []domain.Result
	err := pg.WithTx(ctx, w.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		results = w.queueDelivery(batch, d, p, events, rand.IntN(w.counterShards), bounds{})
		_, span := startBatchSpan(ctx, batch.Len())
		err := tx.SendBatch(ctx, batch).Close()
		endBatchSpan(span, err)
		if err != nil {
			return err
		}
		return then(ctx, tx, results)
	})
	return results, err
}

// programLimit returns PostgreSQL's message when it refused a statement for
// exceeding one of its limits (SQLSTATE class 54).
func programLimit(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "54") {
		return pgErr.Message, true
	}
	return "", false
}

// rejectOffenders tries each event alone, in a transaction it rolls back,
// and rejects those PostgreSQL refuses with a program-limit error.
func (w *Writer) rejectOffenders(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) error {
	for i, e := range events {
		err := w.probe(ctx, d, p, []domain.Event{e})
		if why, ok := programLimit(err); ok {
			events[i] = refused(e, why)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// probe runs the statements of a delivery of these events and rolls them
// back, returning the error they met.
func (w *Writer) probe(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	batch := &pgx.Batch{}
	w.queueDelivery(batch, d, p, events, 0, bounds{})
	return tx.SendBatch(ctx, batch).Close()
}

// refused is e rejected because PostgreSQL would not store it, keeping only
// its names and raw payload so that the rejection itself can be logged.
func refused(e domain.Event, why string) domain.Event {
	e.RejectReason = "PostgreSQL cannot store this event: " + why
	e.ObjectID, e.Revision, e.Snapshot, e.Property, e.Lead = "", nil, nil, "", nil
	return e
}

// ensureScopes creates the scopes first used by these events, with their
// defaults. It runs outside the ingest transaction: inside it, every
// concurrent delivery of a new scope would queue behind the first one's
// whole transaction. The events of a scope PostgreSQL refuses for one of
// its limits are rejected, without the object type that names it.
func (w *Writer) ensureScopes(ctx context.Context, p domain.ProviderEndpoint, events []domain.Event) error {
	ensured := map[domain.ScopeName]bool{}
	for _, e := range events {
		if _, known := p.Scopes[e.Scope]; known || ensured[e.Scope] || e.Scope.ObjectType == "" {
			continue
		}
		ensured[e.Scope] = true
		tag, err := w.pool.Exec(ctx, ensureScopeSQL.SQL, ensureScopeSQL.Args(pgx.NamedArgs{"tenant_id": p.TenantID,
			"provider_id": p.ID, "object_type": e.Scope.ObjectType, "action": e.Scope.Action})...)
		if err == nil && tag.RowsAffected() == 1 {
			err = pg.NotifyEndpoints(ctx, w.pool, p.TenantID)
		}
		if why, refusedScope := programLimit(err); refusedScope {
			for i := range events {
				if events[i].Scope == e.Scope {
					events[i] = refused(events[i], why)
					events[i].Scope.ObjectType = ""
				}
			}
		} else if err != nil {
			return pg.Translate(err)
		}
	}
	return nil
}
