package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark/tidemark/domain"
)

// defaultCounterShards is how many rows share one (tenant, provider, hour,
// outcome) count. Concurrent deliveries pick a shard at random, so a burst
// on one tenant spreads its counter updates instead of queueing on one row
// lock held until commit (BenchmarkCounterShards measures the difference).
const defaultCounterShards = 16

// contentHash fingerprints what an event says about its record: the object
// id, the revision and the snapshot in jsonb's canonical text form (so key
// order and whitespace do not matter). Both the claim and the duplicate check
// compute it in SQL from the same parameters.
const contentHash = `sha256(convert_to(@object_id::text || chr(31) || coalesce(@revision::bigint::text, '') || chr(31) || coalesce(@snapshot::jsonb::text, ''), 'UTF8'))`

// tooFarAhead is true when the event's revision is a timestamp further
// ahead of the database's clock than the provider accepts. It reads the
// transaction's start time, so the claim and the outcome statement of one
// delivery always agree on it.
const tooFarAhead = `coalesce(@revision_at::timestamptz > now() + make_interval(secs => @max_skew::float8), false)`

// goDuration is SQL that writes a whole number of seconds s the way Go
// writes a duration (2h3m0s, 5m0s, 45s), so reasons read alike whichever
// side wrote them.
const goDuration = `CASE WHEN s >= 3600 THEN format('%sh%sm%ss', s / 3600, s % 3600 / 60, s % 60)
    WHEN s >= 60 THEN format('%sm%ss', s / 60, s % 60) ELSE format('%ss', s) END`

// Step 1: claim the idempotency key. A key whose TTL has passed is forgotten,
// so it can be claimed again; otherwise a conflicting claim waits for the
// other transaction and then does nothing. Expiry is the database's clock,
// whatever the receiving node's says. An event dated too far ahead claims
// nothing, so nothing of it is applied.
var claimSQL = named(`
INSERT INTO idempotency_keys AS k (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, claimed_at, expires_at)
SELECT @tenant_id, @key, @provider_id, @identifier, ` + contentHash + `, @delivery_id, @seq,
       statement_timestamp(), statement_timestamp() + make_interval(secs => @ttl::float8)
WHERE NOT ` + tooFarAhead + `
ON CONFLICT (tenant_id, key) DO UPDATE SET
    identifier = EXCLUDED.identifier, content_hash = EXCLUDED.content_hash, delivery_id = EXCLUDED.delivery_id,
    seq = EXCLUDED.seq, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= EXCLUDED.claimed_at`)

// Step 2: the revision guard. Only an event that holds its claim may write,
// and only a strictly higher revision replaces the stored snapshot. A
// concurrent writer of the same record is waited for, and the WHERE clause
// is then checked against the row it committed. A refused update still
// locks the row until commit: that is what makes two concurrent events of
// one revision see each other in step 3, so never replace this with a read.
var applySQL = named(`
WITH applied AS (
    INSERT INTO records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot,
                              last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT @tenant_id, @provider_id, @object_type, @object_id, @revision, @snapshot, @event_id, @delivery_id, @seq, @now, @now
    FROM idempotency_keys k
    WHERE k.tenant_id = @tenant_id AND k.key = @key AND k.delivery_id = @delivery_id AND k.seq = @seq
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
        revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot, application_count = r.application_count + 1,
        last_applied_event = EXCLUDED.last_applied_event, last_applied_delivery = EXCLUDED.last_applied_delivery,
        last_applied_seq = EXCLUDED.last_applied_seq, updated_at = EXCLUDED.updated_at
    WHERE EXCLUDED.revision > r.revision
    RETURNING revision, snapshot
)
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, applied_at)
SELECT @tenant_id, @provider_id, @object_type, @object_id, revision, snapshot, @event_id, @delivery_id, @now FROM applied`)

// Step 2 for a change of one property (HubSpot propertyChange, creation,
// deletion): the same guard, per property. The change is merged into the
// snapshot only if it is newer than the revision that last set that
// property, and newer than a deletion of the record.
var applyPropertySQL = named(`
WITH applied AS (
    INSERT INTO records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot, property_revisions,
                              deleted_revision, last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT @tenant_id, @provider_id, @object_type, @object_id, @revision, @snapshot,
           jsonb_build_object(@property::text, @revision::bigint),
           CASE WHEN @property::text = '` + domain.PropertyDeleted + `' THEN @revision::bigint END,
           @event_id, @delivery_id, @seq, @now, @now
    FROM idempotency_keys k
    WHERE k.tenant_id = @tenant_id AND k.key = @key AND k.delivery_id = @delivery_id AND k.seq = @seq
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
        snapshot = r.snapshot || EXCLUDED.snapshot, property_revisions = r.property_revisions || EXCLUDED.property_revisions,
        revision = greatest(r.revision, EXCLUDED.revision), deleted_revision = coalesce(EXCLUDED.deleted_revision, r.deleted_revision),
        application_count = r.application_count + 1, last_applied_event = EXCLUDED.last_applied_event,
        last_applied_delivery = EXCLUDED.last_applied_delivery, last_applied_seq = EXCLUDED.last_applied_seq,
        updated_at = EXCLUDED.updated_at
    WHERE coalesce((r.property_revisions ->> @property::text)::bigint, -1) < EXCLUDED.revision
      AND coalesce(r.deleted_revision, -1) < EXCLUDED.revision
    RETURNING snapshot
)
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, property, event_id, delivery_id, applied_at)
SELECT @tenant_id, @provider_id, @object_type, @object_id, @revision, snapshot, @property, @event_id, @delivery_id, @now FROM applied`)

// Step 2 for a lead signup, after its advisory locks: find or create the
// account by domain and the person by email, link them, create one
// follow-up task for a new person and add the person to the campaign
// once. The locks make this read-then-write race-free; the unique
// constraints back them. The claim records what the event did.
var leadSQL = named(`
WITH mine AS (
    SELECT EXISTS (SELECT FROM idempotency_keys WHERE tenant_id = @tenant_id AND key = @key
                   AND delivery_id = @delivery_id AND seq = @seq) AS yes
), found_account AS (
    SELECT id FROM accounts WHERE tenant_id = @tenant_id AND domain = @domain::text
), new_account AS (
    INSERT INTO accounts (tenant_id, domain, name)
    SELECT @tenant_id, @domain::text, coalesce(nullif(@company::text, ''), @domain::text)
    WHERE @domain::text IS NOT NULL AND (SELECT yes FROM mine) AND NOT EXISTS (SELECT FROM found_account)
    RETURNING id
), account AS (
    SELECT id FROM found_account UNION ALL SELECT id FROM new_account
), found_person AS (
    SELECT id, account_id FROM people WHERE tenant_id = @tenant_id AND email = @email
), new_person AS (
    INSERT INTO people (tenant_id, email, name, account_id, source)
    SELECT @tenant_id, @email, coalesce(@name::text, ''), (SELECT id FROM account), coalesce(@source::text, '')
    WHERE (SELECT yes FROM mine) AND NOT EXISTS (SELECT FROM found_person)
    RETURNING id
), linked AS (
    UPDATE people SET account_id = (SELECT id FROM account), updated_at = @now
    WHERE tenant_id = @tenant_id AND id = (SELECT id FROM found_person) AND account_id IS NULL
      AND EXISTS (SELECT FROM account) AND (SELECT yes FROM mine)
    RETURNING id
), person AS (
    SELECT id FROM found_person UNION ALL SELECT id FROM new_person
), task AS (
    INSERT INTO tasks (tenant_id, person_id, title)
    SELECT @tenant_id, id, 'Follow up with ' || @email FROM new_person
    RETURNING id
), joined AS (
    INSERT INTO campaign_members (tenant_id, campaign, person_id, source, joined_at)
    SELECT @tenant_id, @campaign, id, coalesce(@source::text, ''), @now FROM person WHERE (SELECT yes FROM mine)
    ON CONFLICT (tenant_id, campaign, person_id) DO NOTHING
    RETURNING 1
)
UPDATE idempotency_keys SET effect = CASE
    WHEN EXISTS (SELECT FROM new_account) OR EXISTS (SELECT FROM new_person) OR EXISTS (SELECT FROM linked)
      OR EXISTS (SELECT FROM joined) OR EXISTS (SELECT FROM task) THEN 'applied' ELSE 'redundant' END
WHERE tenant_id = @tenant_id AND key = @key AND delivery_id = @delivery_id AND seq = @seq`)

var leadLockSQL = named(`SELECT pg_advisory_xact_lock(@key)`)

// projectedSnapshot is what of a stored snapshot (the column snapshot) an
// event is compared with: all of it, or for a property change just
// {property: value} ({} for creation and deletion, which carry no value).
const projectedSnapshot = `CASE WHEN @property::text IS NULL THEN snapshot
                WHEN @property::text LIKE '$%' THEN '{}'::jsonb
                ELSE jsonb_build_object(@property::text, snapshot -> @property::text) END`

// Step 3: decide the outcome in a new statement, which sees whatever the
// waits of steps 1 and 2 let other transactions commit, then log the event
// and open a conflict when needed.
var outcomeSQL = named(`
WITH claim AS (
    SELECT delivery_id, seq, content_hash, effect FROM idempotency_keys WHERE tenant_id = @tenant_id AND key = @key
), rec AS (
    SELECT revision, snapshot, property_revisions, deleted_revision, last_applied_event, last_applied_delivery, last_applied_seq
    FROM records
    WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type AND object_id = @object_id
), cur AS (
    -- What the event is compared with: the whole record, or for a property
    -- change that property's revision and value.
    SELECT CASE WHEN @property::text IS NULL THEN revision
                ELSE (property_revisions ->> @property::text)::bigint END AS revision,
           ` + projectedSnapshot + ` AS snapshot, last_applied_event, deleted_revision
    FROM rec
), facts AS (
    SELECT EXISTS (SELECT FROM claim WHERE delivery_id = @delivery_id AND seq = @seq) AS claimed,
           EXISTS (SELECT FROM rec WHERE last_applied_delivery = @delivery_id AND last_applied_seq = @seq) AS applied,
           ` + tooFarAhead + ` AS ahead,
           round(extract(epoch FROM @revision_at::timestamptz - now()))::bigint AS ahead_secs
), rival AS (
    -- A retained snapshot of this record at the same revision that differs
    -- from the event's: the current one, an accepted one, or a stale event's.
    -- Looked for only when the event holds its claim and was not applied
    -- (a one-time filter), so the common path skips these scans.
    SELECT event_id, snapshot FROM (
        SELECT 1 AS pref, last_applied_event AS event_id, snapshot FROM cur
        WHERE revision = @revision::bigint AND @property::text IS NULL
        UNION ALL
        SELECT 2, event_id, ` + projectedSnapshot + ` FROM accepted_revisions
        WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type
          AND object_id = @object_id AND revision = @revision::bigint AND property IS NOT DISTINCT FROM @property::text
        UNION ALL
        SELECT 3, event_id, snapshot FROM events
        WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_type = @object_type
          AND object_id = @object_id AND revision = @revision::bigint AND outcome = 'stale'
          AND property IS NOT DISTINCT FROM @property::text
          -- No event is logged after this one (a day allows for skewed
          -- clocks between nodes): the partitions ahead are pruned when
          -- the statement starts instead of being opened for nothing.
          AND received_at <= @now::timestamptz + interval '1 day'
    ) retained
    WHERE snapshot <> @snapshot::jsonb AND (SELECT claimed AND NOT applied FROM facts)
    ORDER BY pref LIMIT 1
), decision AS (
    SELECT CASE
        WHEN @reject_reason::text IS NOT NULL OR f.ahead THEN 'rejected'
        WHEN NOT f.claimed THEN
            CASE WHEN EXISTS (SELECT FROM claim WHERE content_hash = ` + contentHash + `)
                 THEN 'duplicate' ELSE 'event_conflict' END
        WHEN (SELECT effect FROM claim) IS NOT NULL THEN (SELECT effect FROM claim)
        WHEN @revision::bigint IS NULL THEN 'unversioned'
        WHEN f.applied THEN 'applied'
        WHEN EXISTS (SELECT FROM rival) THEN 'revision_conflict'
        WHEN EXISTS (SELECT FROM cur WHERE revision = @revision::bigint) THEN 'redundant'
        ELSE 'stale'
    END AS outcome
    FROM facts f
), decided AS (
    SELECT d.outcome, CASE d.outcome
        WHEN 'rejected' THEN coalesce(@reject_reason::text,
            format('revision is dated %s ahead of the database clock; this provider accepts at most %s',
                   (SELECT ` + goDuration + ` FROM (SELECT ahead_secs AS s FROM facts) ahead),
                   (SELECT ` + goDuration + ` FROM (SELECT round(@max_skew::float8)::bigint AS s) allowed)))
        WHEN 'event_conflict' THEN 'this event id was seen before with a different record, revision or snapshot'
        WHEN 'unversioned' THEN 'the event carries no revision, so it is recorded but never applied'
        WHEN 'stale' THEN CASE
            WHEN (SELECT deleted_revision FROM cur) >= @revision::bigint
            THEN format('revision %s is older than the deletion of the record at revision %s', @revision::bigint, (SELECT deleted_revision FROM cur))
            WHEN @property::text IS NOT NULL
            THEN format('revision %s of %s is older than its stored revision %s', @revision::bigint, @property::text, (SELECT revision FROM cur))
            ELSE format('revision %s is older than the stored revision %s', @revision::bigint, (SELECT revision FROM cur)) END
        WHEN 'revision_conflict' THEN format('revision %s was already seen with a different snapshot (event %s)',
                                             @revision::bigint, (SELECT event_id FROM rival))
    END AS reason
    FROM decision d
), conflict AS (
    INSERT INTO conflicts (tenant_id, provider_id, object_type, object_id, revision, accepted_event_id,
                           accepted_snapshot, conflicting_event_id, conflicting_snapshot, detected_at)
    SELECT @tenant_id, @provider_id, @object_type, @object_id, @revision, rival.event_id, rival.snapshot,
           @event_id, @snapshot, @now
    FROM rival, decided WHERE decided.outcome = 'revision_conflict'
    RETURNING id
), logged AS (
    INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id,
                        object_id, revision, outcome, reason, snapshot, payload, conflict_id, property)
    SELECT @tenant_id, @now, @delivery_id, @seq, @provider_id, @object_type, @action, @event_id,
           @object_id, @revision, outcome, reason, @snapshot, @payload, (SELECT id FROM conflict), @property
    FROM decided
), counted AS (
    -- The counter moves with the event it counts. It is counted here, from
    -- the decision, rather than by a later statement reading the log back:
    -- a generic plan over the partitioned log locks every partition.
    INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
    SELECT @tenant_id, @provider_id, date_trunc('hour', @now::timestamptz, 'UTC'), outcome, @shard, 1 FROM decided
    ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + 1
)
SELECT outcome, reason, (SELECT revision FROM rec), coalesce((SELECT id FROM conflict), 0) FROM decided`)

var deliverySQL = named(`
INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, reason, event_count, body,
                        method, path, query, headers, truncated, client_address, replay_of)
VALUES (@tenant_id, @delivery_id, @now, @provider_id, @status, @signature, @reason, @event_count, @body,
        @method, @path, @query, @headers::jsonb, @truncated, @client_address, @replay_of::uuid)`)

var ensureScopeSQL = named(`
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
	return results, translate(err)
}

// ingestRetrying runs the delivery's transaction, again after a lost
// deadlock or serialization race, three attempts in all.
func (s *Store) ingestRetrying(ctx context.Context, write writeFunc, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	for attempt := 1; ; attempt++ {
		results, err := write(ctx, d, p, events)
		if err != nil && retryable(err) && attempt < 3 {
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
		_, err := s.pool.Exec(ctx, ensureScopeSQL.sql, ensureScopeSQL.args(pgx.NamedArgs{"tenant_id": p.TenantID,
			"provider_id": p.ID, "object_type": e.Scope.ObjectType, "action": e.Scope.Action})...)
		if why, refusedScope := programLimit(err); refusedScope {
			for i := range events {
				if events[i].Scope == e.Scope {
					events[i] = refused(events[i], why)
					events[i].Scope.ObjectType = ""
				}
			}
		} else if err != nil {
			return translate(err)
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

// queueDelivery queues the statements of a delivery on batch, counting its
// outcomes in counter shard shard; the results are filled in as the batch
// is read.
func (s *Store) queueDelivery(batch *pgx.Batch, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event, shard int) []domain.Result {
	results := make([]domain.Result, len(events))
	args := pgx.NamedArgs{
		"tenant_id": p.TenantID, "delivery_id": d.ID, "now": d.ReceivedAt, "provider_id": p.ID,
		"status": d.Status, "signature": d.Signature, "reason": nullString(d.Reason),
		"event_count": len(events), "body": d.Body, "replay_of": nullString(d.ReplayOf),
	}
	columnsOf(d.Request).set(args)
	batch.Queue(deliverySQL.sql, deliverySQL.args(args)...)
	for i, e := range events {
		scope := p.Scope(e.Scope)
		if e.RejectReason == "" && !scope.Enabled {
			e.RejectReason = fmt.Sprintf("scope %s is disabled for this provider", e.Scope)
		}
		args := eventArgs(d, p, e, scope)
		args["shard"] = shard
		if e.RejectReason == "" {
			batch.Queue(claimSQL.sql, claimSQL.args(args)...)
			switch {
			case e.Lead != nil:
				for _, k := range domain.LeadLockKeys(p.TenantID, *e.Lead) {
					batch.Queue(leadLockSQL.sql, leadLockSQL.args(pgx.NamedArgs{"key": k})...)
				}
				batch.Queue(leadSQL.sql, leadSQL.args(args)...)
			case e.Revision != nil && e.Property != "":
				batch.Queue(applyPropertySQL.sql, applyPropertySQL.args(args)...)
			case e.Revision != nil:
				batch.Queue(applySQL.sql, applySQL.args(args)...)
			}
		}
		batch.Queue(outcomeSQL.sql, outcomeSQL.args(args)...).QueryRow(func(row pgx.Row) error {
			r := &results[i]
			*r = domain.Result{EventID: e.EventID, ObjectType: e.Scope.ObjectType, ObjectID: e.ObjectID, Revision: e.Revision}
			var reason *string
			if err := row.Scan(&r.Outcome, &reason, &r.CurrentRevision, &r.ConflictID); err != nil {
				return fmt.Errorf("event %d outcome: %w", i, err)
			}
			if reason != nil {
				r.Reason = *reason
			}
			return nil
		})
	}
	return results
}

// latestRevisionTime stands for any revision time past it, which PostgreSQL
// could not store (a HubSpot occurredAt can name the year 292 million).
var latestRevisionTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

func eventArgs(d domain.Delivery, p domain.ProviderEndpoint, e domain.Event, scope domain.Scope) pgx.NamedArgs {
	args := pgx.NamedArgs{
		"tenant_id": p.TenantID, "provider_id": p.ID, "delivery_id": d.ID, "seq": e.Seq, "now": d.ReceivedAt,
		"object_type": e.Scope.ObjectType, "action": e.Scope.Action, "event_id": e.EventID,
		"object_id": nullString(e.ObjectID), "revision": e.Revision, "snapshot": nullJSON(e.Snapshot),
		"payload": e.Payload, "reject_reason": nullString(e.RejectReason), "key": []byte(nil),
		"identifier": "", "ttl": scope.TTL.Seconds(), "property": nullString(e.Property),
		"revision_at": nil, "max_skew": p.MaxFutureSkew.Seconds(),
	}
	if e.Revision != nil && !e.RevisionTime.IsZero() && e.RejectReason == "" {
		at := e.RevisionTime
		if at.After(latestRevisionTime) {
			at = latestRevisionTime // later than PostgreSQL holds, and as surely too far ahead
		}
		args["revision_at"] = at
	}
	if l := e.Lead; l != nil {
		args["email"], args["name"], args["company"] = l.Email, nullString(l.Name), nullString(l.Company)
		args["domain"], args["campaign"], args["source"] = nullString(l.Domain), l.Campaign, nullString(l.Source)
	}
	if e.RejectReason == "" {
		identifier := scope.IdentifierRule.Identifier(e)
		args["identifier"] = identifier
		args["key"] = domain.IdempotencyKey(p.TenantID, p.ID, e.Scope, identifier)
	}
	return args
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
