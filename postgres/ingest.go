package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/domain"
)

// defaultCounterShards is how many rows share one (tenant, provider, hour,
// outcome) count. Concurrent deliveries pick a shard at random, so a burst
// on one tenant spreads its counter updates instead of queueing on one row
// lock held until commit (BenchmarkCounterShards measures the difference).
const defaultCounterShards = 16

var deliveriesSQL = pg.Named(`
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address, replay_of)
SELECT d.tenant_id, d.id, d.received_at, d.provider_id, d.status, d.signature, d.reason, d.event_count, d.body,
       d.method, d.path, d.query, d.headers, d.truncated, d.client_address, d.replay_of
FROM ` + deliveryRowsSQL + ``)

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
func (s *Store) Ingest(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	return s.ingestWith(ctx, d, p, events, s.ingestGrouped)
}

// writeFunc writes the statements of one delivery in one transaction: by
// group commit for a delivery that arrived, alone with its audit entry or
// its job's progress for a replay (replay.go).
type writeFunc func(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error)

// ingestWith is Ingest writing with write.
func (s *Store) ingestWith(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, write writeFunc) ([]domain.Result, error) {
	events = slices.Clone(events)
	for i := range events {
		events[i] = domain.ApplyLimits(events[i])
	}
	if err := s.ensureScopes(ctx, p, events); err != nil {
		return nil, err
	}
	results, err := s.ingestRetrying(ctx, write, d, p, events)
	if _, refusedOne := programLimit(err); refusedOne {
		if err = s.rejectOffenders(ctx, d, p, events); err == nil {
			results, err = s.ingestRetrying(ctx, write, d, p, events)
		}
	}
	if why, refusedAll := programLimit(err); refusedAll {
		// Refused together but never alone: reject them all.
		for i := range events {
			events[i] = refused(events[i], why)
		}
		results, err = s.ingestRetrying(ctx, write, d, p, events)
	}
	return results, pg.Translate(err)
}

// ingestRetrying runs the delivery's transaction, again after a lost
// deadlock or serialization race, three attempts in all.
func (s *Store) ingestRetrying(ctx context.Context, write writeFunc, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	for attempt := 1; ; attempt++ {
		results, err := write(ctx, d, p, events)
		if err != nil && pg.Retryable(err) && attempt < 3 {
			continue
		}
		return results, err
	}
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
func (s *Store) rejectOffenders(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) error {
	for i, e := range events {
		err := s.probe(ctx, d, p, []domain.Event{e})
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
func (s *Store) probe(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	batch := &pgx.Batch{}
	s.queueDelivery(batch, d, p, events, 0)
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
func (s *Store) ensureScopes(ctx context.Context, p domain.ProviderEndpoint, events []domain.Event) error {
	ensured := map[domain.ScopeName]bool{}
	for _, e := range events {
		if _, known := p.Scopes[e.Scope]; known || ensured[e.Scope] || e.Scope.ObjectType == "" {
			continue
		}
		ensured[e.Scope] = true
		_, err := s.pool.Exec(ctx, ensureScopeSQL.SQL, ensureScopeSQL.Args(pgx.NamedArgs{"tenant_id": p.TenantID,
			"provider_id": p.ID, "object_type": e.Scope.ObjectType, "action": e.Scope.Action})...)
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

// ingestAlone writes one delivery in a transaction of its own.
func (s *Store) ingestAlone(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	batch := &pgx.Batch{}
	results := s.queueDelivery(batch, d, p, events, rand.IntN(s.counterShards))
	if s.beforeCommitSQL != "" {
		batch.Queue(s.beforeCommitSQL)
	}
	return results, s.pool.SendBatch(ctx, batch).Close()
}
