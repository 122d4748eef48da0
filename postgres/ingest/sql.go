package ingest

import (
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The ingest statements are set-based: each takes the events of one round
// (plan.go) as parallel arrays and handles them all at once, so a
// group costs a few statements per round rather than three per event. The
// events of one round touch no common idempotency key, record or lead, so
// the order in which one statement handles them cannot change an outcome.

// eventRows unnests the arrays of a round into one row per event; i is the
// event's position in the round.
const eventRows = `unnest(@tenant_id::bigint[], @provider_id::bigint[], @delivery_id::uuid[], @seq::int[], @now::timestamptz[],
    @object_type::text[], @action::text[], @event_id::text[], @object_id::text[], @revision::bigint[],
    @snapshot::jsonb[], @payload::bytea[], @reject_reason::text[], @key::bytea[], @identifier::text[],
    @ttl::float8[], @property::text[], @revision_at::timestamptz[], @max_skew::float8[], @lead::bool[])
  WITH ORDINALITY AS e (tenant_id, provider_id, delivery_id, seq, now, object_type, action, event_id, object_id, revision,
    snapshot, payload, reject_reason, key, identifier, ttl, property, revision_at, max_skew, lead, i)`

// claimRows and applyRows are eventRows with only the columns the claim and
// the guarded upserts read, so that they are sent only those arrays (the
// largest, payload, only the outcome statement needs).
const (
	claimRows = `unnest(@tenant_id::bigint[], @key::bytea[], @provider_id::bigint[], @identifier::text[], @object_id::text[],
    @revision::bigint[], @snapshot::jsonb[], @delivery_id::uuid[], @seq::int[], @ttl::float8[],
    @revision_at::timestamptz[], @max_skew::float8[])
  WITH ORDINALITY AS e (tenant_id, key, provider_id, identifier, object_id, revision, snapshot, delivery_id, seq, ttl,
    revision_at, max_skew, i)`
	applyRows = `unnest(@tenant_id::bigint[], @key::bytea[], @delivery_id::uuid[], @seq::int[], @revision::bigint[], @property::text[],
    @lead::bool[], @provider_id::bigint[], @object_type::text[], @object_id::text[], @snapshot::jsonb[],
    @event_id::text[], @now::timestamptz[])
  WITH ORDINALITY AS e (tenant_id, key, delivery_id, seq, revision, property, lead, provider_id, object_type, object_id,
    snapshot, event_id, now, i)`
)

// contentHash fingerprints what an event says about its record: the object
// id, the revision and the snapshot in jsonb's canonical text form (so key
// order and whitespace do not matter). Both the claim and the duplicate check
// compute it from the same columns.
const contentHash = `sha256(convert_to(e.object_id || chr(31) || coalesce(e.revision::text, '') || chr(31) || coalesce(e.snapshot::text, ''), 'UTF8'))`

// tooFarAhead is true when the event's revision is a timestamp further
// ahead of the database's clock than the provider accepts. It reads the
// transaction's start time, so the claim and the outcome statement of one
// delivery always agree on it.
const tooFarAhead = `coalesce(e.revision_at > now() + make_interval(secs => e.max_skew), false)`

// goDuration is SQL that writes a whole number of seconds s the way Go
// writes a duration (2h3m0s, 5m0s, 45s), so reasons read alike whichever
// side wrote them.
const goDuration = `CASE WHEN s >= 3600 THEN format('%sh%sm%ss', s / 3600, s % 3600 / 60, s % 60)
    WHEN s >= 60 THEN format('%sm%ss', s / 60, s % 60) ELSE format('%ss', s) END`

// Step 1: claim the idempotency keys. A key whose TTL has passed is
// forgotten, so it can be claimed again; otherwise a conflicting claim
// waits for the other transaction and then does nothing. Expiry is the
// database's clock, whatever the receiving node's says. An event dated too
// far ahead claims nothing, so nothing of it is applied. Rows are locked in
// key order, one order for every writer.
const claimKeysSQL = `
INSERT INTO idempotency_keys AS k (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, claimed_at, expires_at)
SELECT e.tenant_id, e.key, e.provider_id, e.identifier, ` + contentHash + `, e.delivery_id, e.seq,
       statement_timestamp(), statement_timestamp() + make_interval(secs => e.ttl)
FROM ` + claimRows + `
WHERE e.key IS NOT NULL AND NOT ` + tooFarAhead + `
ORDER BY e.tenant_id, e.key
ON CONFLICT (tenant_id, key) DO UPDATE SET
    identifier = EXCLUDED.identifier, content_hash = EXCLUDED.content_hash, delivery_id = EXCLUDED.delivery_id,
    seq = EXCLUDED.seq, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= EXCLUDED.claimed_at`

const claimSQL = claimKeysSQL

// claimedEvents are the round's events that hold their claim. Every
// lookup of the round's rows is a LATERAL ... LIMIT 1: a generic plan does
// not know how few events an array holds, and would otherwise read every
// claim or record of the tenant into a hash table.
const claimedEvents = `
    FROM ` + applyRows + `
    JOIN LATERAL (SELECT FROM idempotency_keys k
                  WHERE k.tenant_id = e.tenant_id AND k.key = e.key AND k.delivery_id = e.delivery_id AND k.seq = e.seq
                  LIMIT 1) claimed ON true`

// Steps 1 and 2 in one statement, for a round without lead signups: the
// claim runs first (its CTE, claimedCTE) and the events it returns, the
// ones that hold their claim (justClaimed), are the ones the guard may
// apply. One statement fewer per round, and no second look at the claims.
const (
	claimedCTE = `claimed AS (` + claimKeysSQL + `
RETURNING tenant_id, key, delivery_id, seq)`
	justClaimed = `
    FROM ` + applyRows + `
    JOIN claimed c ON c.tenant_id = e.tenant_id AND c.key = e.key AND c.delivery_id = e.delivery_id AND c.seq = e.seq`
)

// Step 2: the revision guard. Only an event that holds its claim may write,
// and only a strictly higher revision replaces the stored snapshot. A
// concurrent writer of the same record is waited for, and the WHERE clause
// is then checked against the row it committed. A refused update still
// locks the row until commit: that is what makes two concurrent events of
// one revision see each other in step 3, so never replace this with a read.
// The upsert is INSERT INTO wholeUpsert, its events (claimedEvents or
// justClaimed), then wholeGuard, in a CTE named applied; INSERT INTO
// wholeRevisions logs what it applied.
const (
	wholeUpsert = `
    records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot,
                              last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.snapshot, e.event_id, e.delivery_id, e.seq, e.now, e.now`
	wholeGuard = `
    WHERE e.revision IS NOT NULL AND e.property IS NULL AND NOT e.lead
    ORDER BY e.tenant_id, e.provider_id, e.object_type, e.object_id
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
        -- A whole snapshot newer than every field change is the record
        -- again (postgres/internal/pg/records.go); a deletion keeps its
        -- revision, which older changes stay stale against.
        revision = EXCLUDED.revision, snapshot = EXCLUDED.snapshot, property_revisions = '{}',
        application_count = r.application_count + 1,
        last_applied_event = EXCLUDED.last_applied_event, last_applied_delivery = EXCLUDED.last_applied_delivery,
        last_applied_seq = EXCLUDED.last_applied_seq, updated_at = EXCLUDED.updated_at
    WHERE EXCLUDED.revision > r.revision
    RETURNING tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at`
	wholeRevisions = `
accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, applied_at)
SELECT tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at
FROM applied`
)

// Step 2 for a change of one property (HubSpot propertyChange, creation,
// deletion): the same guard, per property. The change is merged into the
// snapshot only if it is newer than the revision that last set that
// property, and newer than a deletion of the record. Composed as the
// whole snapshot's guard is, in a CTE named applied_property.
const (
	propertyUpsert = `
    records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot, property_revisions,
                              deleted_revision, last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.snapshot,
           jsonb_build_object(e.property, e.revision),
           CASE WHEN e.property = '` + domain.PropertyDeleted + `' THEN e.revision END,
           e.event_id, e.delivery_id, e.seq, e.now, e.now`
	propertyGuard = `
    WHERE e.revision IS NOT NULL AND e.property IS NOT NULL AND NOT e.lead
    ORDER BY e.tenant_id, e.provider_id, e.object_type, e.object_id
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
        snapshot = r.snapshot || EXCLUDED.snapshot,
        property_revisions = ` + pg.MergedPropertyRevisions + ` || EXCLUDED.property_revisions,
        revision = greatest(r.revision, EXCLUDED.revision), deleted_revision = coalesce(EXCLUDED.deleted_revision, r.deleted_revision),
        application_count = r.application_count + 1, last_applied_event = EXCLUDED.last_applied_event,
        last_applied_delivery = EXCLUDED.last_applied_delivery, last_applied_seq = EXCLUDED.last_applied_seq,
        updated_at = EXCLUDED.updated_at
    WHERE NOT EXISTS (SELECT FROM jsonb_each_text(EXCLUDED.property_revisions) change
                      WHERE coalesce(` + pg.PropertyRevisionOfChangeKey + `, -1) >= change.value::bigint)
      AND coalesce(r.deleted_revision, -1) < EXCLUDED.revision
    RETURNING tenant_id, snapshot, last_applied_delivery, last_applied_seq`
	propertyRevisions = `
accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, property, event_id, delivery_id, applied_at)
SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, a.snapshot, e.property, e.event_id, e.delivery_id, e.now
FROM applied_property a JOIN ` + applyRows + `
  ON e.tenant_id = a.tenant_id AND e.delivery_id = a.last_applied_delivery AND e.seq = a.last_applied_seq`
)

// The guards after a separate claim (a round with lead signups, whose
// locks come between the two), and with the claim in the same statement.
const (
	applySQL = `WITH applied AS (INSERT INTO ` + wholeUpsert + claimedEvents + wholeGuard + `)
INSERT INTO ` + wholeRevisions
	applyPropertySQL = `WITH applied_property AS (INSERT INTO ` + propertyUpsert + claimedEvents + propertyGuard + `)
INSERT INTO ` + propertyRevisions

	claimApplySQL = `WITH ` + claimedCTE + `,
applied AS (INSERT INTO ` + wholeUpsert + justClaimed + wholeGuard + `)
INSERT INTO ` + wholeRevisions
	claimApplyPropertySQL = `WITH ` + claimedCTE + `,
applied_property AS (INSERT INTO ` + propertyUpsert + justClaimed + propertyGuard + `)
INSERT INTO ` + propertyRevisions
	claimApplyBothSQL = `WITH ` + claimedCTE + `,
applied AS (INSERT INTO ` + wholeUpsert + justClaimed + wholeGuard + `),
applied_property AS (INSERT INTO ` + propertyUpsert + justClaimed + propertyGuard + `),
whole_revisions AS (INSERT INTO ` + wholeRevisions + `)
INSERT INTO ` + propertyRevisions
)

// Step 2 for a lead signup, after its advisory locks: find or create the
// account by domain and the person by email, link them, create one
// follow-up task for a new person and add the person to the campaign
// once. The locks make this read-then-write race-free; the unique
// constraints back them. The claim records what the event did. What it
// creates is dated by the delivery's receipt (@now), as the campaign
// membership is, so a person is never created after their first campaign
// was joined.
const leadSQL = `
WITH mine AS (
    SELECT EXISTS (SELECT FROM idempotency_keys WHERE tenant_id = @tenant_id AND key = @key
                   AND delivery_id = @delivery_id AND seq = @seq) AS yes
), found_account AS (
    SELECT id FROM accounts WHERE tenant_id = @tenant_id AND domain = @domain::text
), new_account AS (
    INSERT INTO accounts (tenant_id, domain, name, created_at)
    SELECT @tenant_id, @domain::text, coalesce(nullif(@company::text, ''), @domain::text), @now::timestamptz
    WHERE @domain::text IS NOT NULL AND (SELECT yes FROM mine) AND NOT EXISTS (SELECT FROM found_account)
    RETURNING id
), account AS (
    SELECT id FROM found_account UNION ALL SELECT id FROM new_account
), found_person AS (
    SELECT id, account_id FROM people WHERE tenant_id = @tenant_id AND email = @email
), new_person AS (
    INSERT INTO people (tenant_id, email, name, account_id, source, created_at, updated_at)
    SELECT @tenant_id, @email, coalesce(@name::text, ''), (SELECT id FROM account), coalesce(@source::text, ''), @now, @now
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
    INSERT INTO tasks (tenant_id, person_id, title, created_at)
    SELECT @tenant_id, id, 'Follow up with ' || @email, @now FROM new_person
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
WHERE tenant_id = @tenant_id AND key = @key AND delivery_id = @delivery_id AND seq = @seq`

// leadLockSQL takes one of a lead signup's advisory locks
// (domain.LeadLockKeys), held until the transaction ends.
const leadLockSQL = `SELECT pg_advisory_xact_lock(@key)`

// storedInCommon and ownInCommon are the fields of the stored snapshot and
// of the event's, each restricted to those the other holds (all of it when
// either is not an object); TestCommonFieldsAgree.
const (
	storedInCommon = `CASE WHEN jsonb_typeof(f.cur_snapshot) = 'object' AND jsonb_typeof(f.snapshot) = 'object'
                THEN (SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM jsonb_each(f.cur_snapshot) kv(k, v) WHERE f.snapshot ? k)
                ELSE f.cur_snapshot END`
	ownInCommon = `CASE WHEN jsonb_typeof(f.snapshot) = 'object' AND jsonb_typeof(f.cur_snapshot) = 'object'
                THEN (SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM jsonb_each(f.snapshot) kv(k, v) WHERE f.cur_snapshot ? k)
                ELSE f.snapshot END`
)

// What of a stored snapshot an event changing a property is compared with:
// all of it, or for a property change just {property: value} ({} for
// creation and deletion, which carry no value). Of the record r for the
// event e, and of the accepted revision a for the event f.
const (
	projectedRecord = `CASE WHEN e.property IS NULL THEN r.snapshot
                WHEN e.property LIKE '$%' THEN '{}'::jsonb
                ELSE jsonb_build_object(e.property, r.snapshot -> e.property) END`
	projectedAccepted = `CASE WHEN f.property IS NULL THEN a.snapshot
                WHEN f.property LIKE '$%' THEN '{}'::jsonb
                ELSE jsonb_build_object(f.property, a.snapshot -> f.property) END`
)

// Step 3: decide the outcomes in a new statement, which sees whatever the
// waits of steps 1 and 2 let other transactions commit, then log the
// events, open conflicts where needed and count the outcomes.
const outcomeSQL = `
WITH ` + outcomeDecision + `
), logged AS (
    INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id,
                        object_id, revision, outcome, reason, snapshot, payload, conflict_id, property)
    SELECT tenant_id, now, delivery_id, seq, provider_id, object_type, action, event_id,
           object_id, revision, outcome, reason, snapshot, payload, conflict_id, property
    FROM answered` + outcomeCounted

// replayOutcomeSQL is outcomeSQL for a replay (a group of one delivery,
// @replay_of, received at @replay_of_at): an event that changed nothing
// (duplicate, redundant; stale only when its original was stale too) and
// whose payload and snapshot are its original's, at the same position,
// logs neither. Its original's are shown for it (postgres/event.go), so
// that replays of a large delivery do not copy its events onto the disk.
// A stale one keeps its own unless the original was stale: the revision
// conflict check reads stale events' snapshots, and finds the original's
// first.
const replayOutcomeSQL = `
WITH ` + outcomeDecision + `
), logged AS (
    INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id,
                        object_id, revision, outcome, reason, snapshot, payload, conflict_id, property)
    SELECT a.tenant_id, a.now, a.delivery_id, a.seq, a.provider_id, a.object_type, a.action, a.event_id,
           a.object_id, a.revision, a.outcome, a.reason, CASE WHEN o.seq IS NULL THEN a.snapshot END,
           CASE WHEN o.seq IS NULL THEN a.payload END, a.conflict_id, a.property
    FROM answered a
    LEFT JOIN LATERAL (
        SELECT o.seq FROM events o
        WHERE o.tenant_id = a.tenant_id AND o.received_at = @replay_of_at::timestamptz
          AND o.delivery_id = @replay_of::uuid AND o.seq = a.seq
          AND o.payload = a.payload AND o.snapshot IS NOT DISTINCT FROM a.snapshot
          AND (a.outcome <> 'stale' OR o.outcome = 'stale')
    ) o ON a.outcome IN ('duplicate', 'redundant', 'stale')` + outcomeCounted

// outcomeDecision is the outcome statements' decision: their CTEs up to
// the events' outcomes, reasons and conflicts (answered), which they then
// log.
const outcomeDecision = `facts AS (
    SELECT e.*, c.key IS NOT NULL AS has_claim, c.content_hash AS claim_hash, c.effect,
           coalesce(c.delivery_id = e.delivery_id AND c.seq = e.seq, false) AS claimed,
           coalesce(r.last_applied_delivery = e.delivery_id AND r.last_applied_seq = e.seq, false) AS applied,
           ` + tooFarAhead + ` AS ahead,
           round(extract(epoch FROM e.revision_at - now()))::bigint AS ahead_secs,
           ` + contentHash + ` AS hash,
           r.revision AS record_revision, r.deleted_revision, r.last_applied_event,
           -- What the event is compared with: the whole record, or for a
           -- property change that property's revision and value.
           CASE WHEN e.property IS NULL THEN r.revision
                ELSE ` + pg.PropertyRevisionOfEvent + ` END AS cur_revision,
           ` + projectedRecord + ` AS cur_snapshot,
           r.property_revisions = '{}' AS whole_record
    FROM ` + eventRows + `
    LEFT JOIN LATERAL (SELECT * FROM idempotency_keys c WHERE c.tenant_id = e.tenant_id
                       AND c.key = e.key LIMIT 1) c ON true
    LEFT JOIN LATERAL (SELECT * FROM records r WHERE r.tenant_id = e.tenant_id
                       AND r.provider_id = e.provider_id
                       AND r.object_type = e.object_type AND r.object_id = e.object_id LIMIT 1) r ON true
), rivalled AS (
    -- A retained snapshot of the record at the same revision that differs
    -- from the event's: the current one, an accepted one, or a stale event's,
    -- the earliest of each kind (their order on disk depends on which
    -- transactions wrote them side by side). Looked for only when the event
    -- holds its claim and was not applied, so the common path skips these
    -- scans.
    SELECT f.*, rival.event_id AS rival_event, rival.snapshot AS rival_snapshot
    FROM facts f
    LEFT JOIN LATERAL (
        SELECT event_id, snapshot FROM (
            -- A record merged from field changes holds more than a whole
            -- snapshot of its revision may: the two are compared on the
            -- fields both hold.
            SELECT 1 AS pref, NULL::timestamptz AS at, NULL::bigint AS n, f.last_applied_event AS event_id,
                   CASE WHEN f.whole_record OR f.property IS NOT NULL THEN f.cur_snapshot
                        ELSE ` + storedInCommon + ` END AS snapshot,
                   CASE WHEN f.whole_record OR f.property IS NOT NULL THEN f.snapshot
                        ELSE ` + ownInCommon + ` END AS ours
            WHERE f.cur_revision = f.revision
              AND (f.property IS NULL OR (f.whole_record AND f.property NOT LIKE '$%'))
            UNION ALL
            SELECT 2, a.applied_at, a.id, a.event_id, ` + projectedAccepted + `, f.snapshot
            FROM accepted_revisions a
            WHERE a.tenant_id = f.tenant_id AND a.provider_id = f.provider_id AND a.object_type = f.object_type
              AND a.object_id = f.object_id AND a.revision = f.revision AND a.property IS NOT DISTINCT FROM f.property
            UNION ALL
            SELECT 3, s.received_at, s.seq, s.event_id, s.snapshot, f.snapshot FROM events s
            WHERE s.tenant_id = f.tenant_id AND s.provider_id = f.provider_id AND s.object_type = f.object_type
              AND s.object_id = f.object_id AND s.revision = f.revision AND s.outcome = 'stale'
              AND s.property IS NOT DISTINCT FROM f.property
              -- No event is logged after the round's latest (a day allows
              -- for skewed clocks between nodes): the partitions ahead are
              -- pruned when the statement starts instead of being opened
              -- for nothing.
              AND s.received_at <= @latest::timestamptz + interval '1 day'
        ) retained
        WHERE snapshot <> ours AND f.claimed AND NOT f.applied
        ORDER BY pref, at, n LIMIT 1
    ) rival ON true
), decision AS (
    SELECT f.*, CASE
        WHEN f.reject_reason IS NOT NULL OR f.ahead THEN 'rejected'
        WHEN NOT f.claimed THEN CASE WHEN f.claim_hash = f.hash THEN 'duplicate' ELSE 'event_conflict' END
        WHEN f.effect IS NOT NULL THEN f.effect
        WHEN f.revision IS NULL THEN 'unversioned'
        WHEN f.applied THEN 'applied'
        WHEN f.rival_event IS NOT NULL THEN 'revision_conflict'
        WHEN f.cur_revision = f.revision THEN 'redundant'
        ELSE 'stale'
    END AS outcome
    FROM rivalled f
), decided AS (
    SELECT d.*, CASE d.outcome
        WHEN 'rejected' THEN coalesce(d.reject_reason,
            format('revision is dated %s ahead of the database clock; this provider accepts at most %s',
                   (SELECT ` + goDuration + ` FROM (SELECT d.ahead_secs AS s) ahead),
                   (SELECT ` + goDuration + ` FROM (SELECT round(d.max_skew)::bigint AS s) allowed)))
        WHEN 'event_conflict' THEN 'this event id was seen before with a different record, revision or snapshot'
        WHEN 'unversioned' THEN 'the event carries no revision, so it is recorded but never applied'
        WHEN 'stale' THEN CASE
            WHEN d.deleted_revision >= d.revision
            THEN format('revision %s is older than the deletion of the record at revision %s', d.revision, d.deleted_revision)
            WHEN d.property IS NOT NULL
            THEN format('revision %s of %s is older than its stored revision %s', d.revision, d.property, d.cur_revision)
            ELSE format('revision %s is older than the stored revision %s', d.revision, d.cur_revision) END
        WHEN 'revision_conflict' THEN format('revision %s was already seen with a different snapshot (event %s)',
                                             d.revision, d.rival_event)
    END AS reason
    FROM decision d
), conflict AS (
    INSERT INTO conflicts (tenant_id, provider_id, object_type, object_id, revision, accepted_event_id,
                           accepted_snapshot, conflicting_event_id, conflicting_snapshot, detected_at)
    SELECT tenant_id, provider_id, object_type, object_id, revision, rival_event, rival_snapshot, event_id, snapshot, now
    FROM decided WHERE outcome = 'revision_conflict'
    RETURNING id, tenant_id, conflicting_event_id, provider_id, object_type, object_id
), answered AS (
    SELECT d.*, c.id AS conflict_id FROM decided d
    LEFT JOIN conflict c ON d.outcome = 'revision_conflict' AND c.tenant_id = d.tenant_id AND c.provider_id = d.provider_id
         AND c.object_type = d.object_type AND c.object_id = d.object_id`

// outcomeCounted counts the outcomes of answered and answers them, after
// the outcome statements' CTE that logs the events.
const outcomeCounted = `
), counted AS (
    -- The counters move with the events they count, in this statement's
    -- own shard row, one update per outcome.
    INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
    SELECT tenant_id, provider_id, date_trunc('hour', now, 'UTC'), outcome, @shard, count(*)
    FROM answered GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n
)
SELECT i, outcome, reason, record_revision, coalesce(conflict_id, 0) FROM answered ORDER BY i`
