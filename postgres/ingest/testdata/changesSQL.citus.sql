-- changesSQL, whole, as Citus is sent it, from the registry of postgres/ingest (statements.go).
-- Regenerate with: go test ./postgres/ingest -run Golden -update
WITH accepted AS (
    SELECT e.i, e.provider_id, e.object_type, e.object_id, e.revision, e.event_id, e.delivery_id, a.snapshot,
           CASE WHEN e.property = '$deleted' THEN 'record.deleted' ELSE 'record.applied' END AS type
    FROM unnest(@ch_provider_id::bigint[], @ch_object_type::text[], @ch_object_id::text[], @ch_revision::bigint[],
                @ch_property::text[], @ch_event_id::text[], @ch_delivery_id::uuid[])
      WITH ORDINALITY AS e (provider_id, object_type, object_id, revision, property, event_id, delivery_id, i)
    JOIN LATERAL (SELECT a.snapshot FROM accepted_revisions a
                  WHERE a.tenant_id = @tenant::bigint AND a.provider_id = e.provider_id AND a.object_type = e.object_type
                    AND a.object_id = e.object_id AND a.revision = e.revision
                    AND a.property IS NOT DISTINCT FROM e.property
                    AND a.event_id = e.event_id AND a.delivery_id = e.delivery_id
                  LIMIT 1) a ON true
), head AS (
    INSERT INTO change_heads AS h (tenant_id, position)
    SELECT @tenant::bigint, count(*) FROM accepted HAVING count(*) > 0
    ON CONFLICT (tenant_id) DO UPDATE SET position = h.position + EXCLUDED.position
    RETURNING h.position - (SELECT count(*) FROM accepted) AS base
), numbered AS (
    SELECT a.*, head.base + row_number() OVER (ORDER BY a.i) AS position,
           lag(a.i) OVER w AS before_i, lag(a.revision) OVER w AS before_revision, lag(a.snapshot) OVER w AS before_snapshot
    FROM accepted a, head
    WINDOW w AS (PARTITION BY a.provider_id, a.object_type, a.object_id ORDER BY a.i)
), previous AS (
    SELECT n.*, CASE WHEN n.before_i IS NOT NULL THEN n.before_revision ELSE s.revision END AS previous_revision,
                CASE WHEN n.before_i IS NOT NULL THEN n.before_snapshot ELSE s.snapshot END AS previous_snapshot
    FROM numbered n
    LEFT JOIN LATERAL (
        SELECT CASE WHEN c.type IN ('record.reset', 'record.erased') THEN NULL ELSE c.revision END AS revision,
           CASE WHEN c.type IN ('record.reset', 'record.erased') THEN NULL ELSE c.snapshot END AS snapshot
        FROM changes c
        WHERE c.tenant_id = @tenant::bigint AND c.provider_id = n.provider_id AND c.object_type = n.object_type
          AND c.object_id = n.object_id
        ORDER BY c.position DESC LIMIT 1) s ON n.before_i IS NULL
)
INSERT INTO changes (tenant_id, position, type, provider_id, object_type, object_id, revision, previous_revision,
                     changed, snapshot, event_id, delivery_id, committed_at)
SELECT @tenant::bigint, position, type, provider_id, object_type, object_id, revision, previous_revision,
       ARRAY(SELECT k FROM (SELECT jsonb_object_keys(snapshot) UNION SELECT jsonb_object_keys(coalesce(previous_snapshot, '{}'))) f (k)
             WHERE snapshot -> k IS DISTINCT FROM previous_snapshot -> k ORDER BY k),
       snapshot, event_id, delivery_id, clock_timestamp()
FROM previous
