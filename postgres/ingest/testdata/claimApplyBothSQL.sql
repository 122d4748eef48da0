-- claimApplyBothSQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
WITH claimed AS (
INSERT INTO idempotency_keys AS k (tenant_id, key, provider_id, identifier, content_hash, delivery_id, seq, claimed_at, expires_at)
SELECT e.tenant_id, e.key, e.provider_id, e.identifier, sha256(convert_to(e.object_id || chr(31) || coalesce(e.revision::text, '') || chr(31) || coalesce(e.snapshot::text, ''), 'UTF8')), e.delivery_id, e.seq,
       statement_timestamp(), statement_timestamp() + make_interval(secs => e.ttl)
FROM unnest(@tenant_id::bigint[], @key::bytea[], @provider_id::bigint[], @identifier::text[], @object_id::text[],
    @revision::bigint[], @snapshot::jsonb[], @delivery_id::uuid[], @seq::int[], @ttl::float8[],
    @revision_at::timestamptz[], @max_skew::float8[])
  WITH ORDINALITY AS e (tenant_id, key, provider_id, identifier, object_id, revision, snapshot, delivery_id, seq, ttl,
    revision_at, max_skew, i)
WHERE e.key IS NOT NULL AND NOT coalesce(e.revision_at > now() + make_interval(secs => e.max_skew), false)
ORDER BY e.tenant_id, e.key
ON CONFLICT (tenant_id, key) DO UPDATE SET
    identifier = EXCLUDED.identifier, content_hash = EXCLUDED.content_hash, delivery_id = EXCLUDED.delivery_id,
    seq = EXCLUDED.seq, claimed_at = EXCLUDED.claimed_at, expires_at = EXCLUDED.expires_at
WHERE k.expires_at <= EXCLUDED.claimed_at
RETURNING tenant_id, key, delivery_id, seq),
applied AS (INSERT INTO 
    records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot,
                              last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.snapshot, e.event_id, e.delivery_id, e.seq, e.now, e.now
    FROM unnest(@tenant_id::bigint[], @key::bytea[], @delivery_id::uuid[], @seq::int[], @revision::bigint[], @property::text[],
    @lead::bool[], @provider_id::bigint[], @object_type::text[], @object_id::text[], @snapshot::jsonb[],
    @event_id::text[], @now::timestamptz[])
  WITH ORDINALITY AS e (tenant_id, key, delivery_id, seq, revision, property, lead, provider_id, object_type, object_id,
    snapshot, event_id, now, i)
    JOIN claimed c ON c.tenant_id = e.tenant_id AND c.key = e.key AND c.delivery_id = e.delivery_id AND c.seq = e.seq
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
    RETURNING tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at),
applied_property AS (INSERT INTO 
    records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot, property_revisions,
                              deleted_revision, last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.snapshot,
           jsonb_build_object(e.property, e.revision),
           CASE WHEN e.property = '$deleted' THEN e.revision END,
           e.event_id, e.delivery_id, e.seq, e.now, e.now
    FROM unnest(@tenant_id::bigint[], @key::bytea[], @delivery_id::uuid[], @seq::int[], @revision::bigint[], @property::text[],
    @lead::bool[], @provider_id::bigint[], @object_type::text[], @object_id::text[], @snapshot::jsonb[],
    @event_id::text[], @now::timestamptz[])
  WITH ORDINALITY AS e (tenant_id, key, delivery_id, seq, revision, property, lead, provider_id, object_type, object_id,
    snapshot, event_id, now, i)
    JOIN claimed c ON c.tenant_id = e.tenant_id AND c.key = e.key AND c.delivery_id = e.delivery_id AND c.seq = e.seq
    WHERE e.revision IS NOT NULL AND e.property IS NOT NULL AND NOT e.lead
    ORDER BY e.tenant_id, e.provider_id, e.object_type, e.object_id
    ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
        snapshot = r.snapshot || EXCLUDED.snapshot,
        property_revisions = CASE WHEN r.property_revisions = '{}' AND r.revision >= 0 THEN coalesce((
                    SELECT jsonb_object_agg(k, r.revision)
                    FROM jsonb_object_keys(CASE WHEN jsonb_typeof(r.snapshot) = 'object' THEN r.snapshot ELSE '{}' END) k), '{}')
                ELSE r.property_revisions END || EXCLUDED.property_revisions,
        revision = greatest(r.revision, EXCLUDED.revision), deleted_revision = coalesce(EXCLUDED.deleted_revision, r.deleted_revision),
        application_count = r.application_count + 1, last_applied_event = EXCLUDED.last_applied_event,
        last_applied_delivery = EXCLUDED.last_applied_delivery, last_applied_seq = EXCLUDED.last_applied_seq,
        updated_at = EXCLUDED.updated_at
    WHERE NOT EXISTS (SELECT FROM jsonb_each_text(EXCLUDED.property_revisions) change
                      WHERE coalesce(coalesce((r.property_revisions ->> change.key)::bigint,
                CASE WHEN r.property_revisions = '{}' AND (change.key = '$created'
                          OR (jsonb_typeof(r.snapshot) = 'object' AND r.snapshot ? change.key)) THEN r.revision END), -1) >= change.value::bigint)
      AND coalesce(r.deleted_revision, -1) < EXCLUDED.revision
    RETURNING tenant_id, snapshot, last_applied_delivery, last_applied_seq),
whole_revisions AS (INSERT INTO 
accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, applied_at)
SELECT tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at
FROM applied)
INSERT INTO 
accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, property, event_id, delivery_id, applied_at)
SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, a.snapshot, e.property, e.event_id, e.delivery_id, e.now
FROM applied_property a JOIN unnest(@tenant_id::bigint[], @key::bytea[], @delivery_id::uuid[], @seq::int[], @revision::bigint[], @property::text[],
    @lead::bool[], @provider_id::bigint[], @object_type::text[], @object_id::text[], @snapshot::jsonb[],
    @event_id::text[], @now::timestamptz[])
  WITH ORDINALITY AS e (tenant_id, key, delivery_id, seq, revision, property, lead, provider_id, object_type, object_id,
    snapshot, event_id, now, i)
  ON e.tenant_id = a.tenant_id AND e.delivery_id = a.last_applied_delivery AND e.seq = a.last_applied_seq
