-- applySQL, whole, as PostgreSQL is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
WITH applied AS (INSERT INTO 
    records AS r (tenant_id, provider_id, object_type, object_id, revision, snapshot,
                              last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at)
    SELECT e.tenant_id, e.provider_id, e.object_type, e.object_id, e.revision, e.snapshot, e.event_id, e.delivery_id, e.seq, e.now, e.now
    FROM unnest(@tenant_id::bigint[], @key::bytea[], @delivery_id::uuid[], @seq::int[], @revision::bigint[], @property::text[],
    @lead::bool[], @provider_id::bigint[], @object_type::text[], @object_id::text[], @snapshot::jsonb[],
    @event_id::text[], @now::timestamptz[])
  WITH ORDINALITY AS e (tenant_id, key, delivery_id, seq, revision, property, lead, provider_id, object_type, object_id,
    snapshot, event_id, now, i)
    JOIN LATERAL (SELECT FROM idempotency_keys k
                  WHERE k.tenant_id = e.tenant_id AND k.key = e.key AND k.delivery_id = e.delivery_id AND k.seq = e.seq
                  LIMIT 1) claimed ON true
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
    RETURNING tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at)
INSERT INTO 
accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, applied_at)
SELECT tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event, last_applied_delivery, updated_at
FROM applied
