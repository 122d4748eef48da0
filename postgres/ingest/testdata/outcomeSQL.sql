-- outcomeSQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
WITH facts AS (
    SELECT e.*, c.key IS NOT NULL AS has_claim, c.content_hash AS claim_hash, c.effect,
           coalesce(c.delivery_id = e.delivery_id AND c.seq = e.seq, false) AS claimed,
           coalesce(r.last_applied_delivery = e.delivery_id AND r.last_applied_seq = e.seq, false) AS applied,
           coalesce(e.revision_at > now() + make_interval(secs => e.max_skew), false) AS ahead,
           round(extract(epoch FROM e.revision_at - now()))::bigint AS ahead_secs,
           sha256(convert_to(e.object_id || chr(31) || coalesce(e.revision::text, '') || chr(31) || coalesce(e.snapshot::text, ''), 'UTF8')) AS hash,
           r.revision AS record_revision, r.deleted_revision, r.last_applied_event,
           -- What the event is compared with: the whole record, or for a
           -- property change that property's revision and value.
           CASE WHEN e.property IS NULL THEN r.revision
                ELSE coalesce((r.property_revisions ->> e.property)::bigint,
                CASE WHEN r.property_revisions = '{}' AND (e.property = '$created'
                          OR (jsonb_typeof(r.snapshot) = 'object' AND r.snapshot ? e.property)) THEN r.revision END) END AS cur_revision,
           CASE WHEN e.property IS NULL THEN r.snapshot
                WHEN e.property LIKE '$%' THEN '{}'::jsonb
                ELSE jsonb_build_object(e.property, r.snapshot -> e.property) END AS cur_snapshot,
           r.property_revisions = '{}' AS whole_record
    FROM unnest(@tenant_id::bigint[], @provider_id::bigint[], @delivery_id::uuid[], @seq::int[], @now::timestamptz[],
    @object_type::text[], @action::text[], @event_id::text[], @object_id::text[], @revision::bigint[],
    @snapshot::jsonb[], @payload::bytea[], @reject_reason::text[], @key::bytea[], @identifier::text[],
    @ttl::float8[], @property::text[], @revision_at::timestamptz[], @max_skew::float8[], @lead::bool[])
  WITH ORDINALITY AS e (tenant_id, provider_id, delivery_id, seq, now, object_type, action, event_id, object_id, revision,
    snapshot, payload, reject_reason, key, identifier, ttl, property, revision_at, max_skew, lead, i)
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
                        ELSE CASE WHEN jsonb_typeof(f.cur_snapshot) = 'object' AND jsonb_typeof(f.snapshot) = 'object'
                THEN (SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM jsonb_each(f.cur_snapshot) kv(k, v) WHERE f.snapshot ? k)
                ELSE f.cur_snapshot END END AS snapshot,
                   CASE WHEN f.whole_record OR f.property IS NOT NULL THEN f.snapshot
                        ELSE CASE WHEN jsonb_typeof(f.snapshot) = 'object' AND jsonb_typeof(f.cur_snapshot) = 'object'
                THEN (SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM jsonb_each(f.snapshot) kv(k, v) WHERE f.cur_snapshot ? k)
                ELSE f.snapshot END END AS ours
            WHERE f.cur_revision = f.revision
              AND (f.property IS NULL OR (f.whole_record AND f.property NOT LIKE '$%'))
            UNION ALL
            SELECT 2, a.applied_at, a.id, a.event_id, CASE WHEN f.property IS NULL THEN a.snapshot
                WHEN f.property LIKE '$%' THEN '{}'::jsonb
                ELSE jsonb_build_object(f.property, a.snapshot -> f.property) END, f.snapshot
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
                   (SELECT CASE WHEN s >= 3600 THEN format('%sh%sm%ss', s / 3600, s % 3600 / 60, s % 60)
    WHEN s >= 60 THEN format('%sm%ss', s / 60, s % 60) ELSE format('%ss', s) END FROM (SELECT d.ahead_secs AS s) ahead),
                   (SELECT CASE WHEN s >= 3600 THEN format('%sh%sm%ss', s / 3600, s % 3600 / 60, s % 60)
    WHEN s >= 60 THEN format('%sm%ss', s / 60, s % 60) ELSE format('%ss', s) END FROM (SELECT round(d.max_skew)::bigint AS s) allowed)))
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
         AND c.object_type = d.object_type AND c.object_id = d.object_id
), logged AS (
    INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id,
                        object_id, revision, outcome, reason, snapshot, payload, conflict_id, property)
    SELECT tenant_id, now, delivery_id, seq, provider_id, object_type, action, event_id,
           object_id, revision, outcome, reason, snapshot, payload, conflict_id, property
    FROM answered
), counted AS (
    -- The counters move with the events they count, in this statement's
    -- own shard row, one update per outcome.
    INSERT INTO outcome_counters AS c (tenant_id, provider_id, bucket, outcome, shard, n)
    SELECT tenant_id, provider_id, date_trunc('hour', now, 'UTC'), outcome, @shard, count(*)
    FROM answered GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (tenant_id, provider_id, bucket, outcome, shard) DO UPDATE SET n = c.n + EXCLUDED.n
)
SELECT i, outcome, reason, record_revision, coalesce(conflict_id, 0) FROM answered ORDER BY i
