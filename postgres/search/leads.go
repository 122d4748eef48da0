package search

// leadType and leadAction are the object type and action of a lead signup
// event (domain.LeadSignupType), whose lead lead_search lists.
const (
	leadType   = `'lead'`
	leadAction = `'signup'`
)

// leadIndexSQL brings lead_search up to date with the leads that have a
// signup event whose search_id is in (@lo, @hi]: each lead's row is
// computed again from all its signups (the events_record index), so
// reading a range twice costs reads only. A lead's erasure (EraseLeadSQL)
// empties the object id of its events, so no later pass brings it back.
const leadIndexSQL = `
WITH changed AS (
    SELECT DISTINCT tenant_id, provider_id, object_id FROM events
    WHERE search_id > @lo AND search_id <= @hi AND object_type = ` + leadType + ` AND action = ` + leadAction + `
      AND object_id IS NOT NULL
)
INSERT INTO lead_search AS l (tenant_id, provider_id, object_type, object_id, updated_at, application_count, snapshot, vector)
SELECT c.tenant_id, c.provider_id, ` + leadType + `, c.object_id, agg.updated_at, agg.applied, latest.snapshot,
       to_tsvector('simple'::regconfig, coalesce(latest.snapshot, '{}'))
FROM changed c
CROSS JOIN LATERAL (
    SELECT max(e.received_at) AS updated_at, count(*) FILTER (WHERE e.outcome = 'applied') AS applied FROM events e
    WHERE e.tenant_id = c.tenant_id AND e.provider_id = c.provider_id AND e.object_type = ` + leadType + `
      AND e.object_id = c.object_id AND e.action = ` + leadAction + `
) agg
LEFT JOIN LATERAL (
    SELECT e.snapshot FROM events e
    WHERE e.tenant_id = c.tenant_id AND e.provider_id = c.provider_id AND e.object_type = ` + leadType + `
      AND e.object_id = c.object_id AND e.action = ` + leadAction + ` AND e.snapshot IS NOT NULL
    ORDER BY e.received_at DESC LIMIT 1
) latest ON true
ORDER BY 1, 2, 3, 4
ON CONFLICT (tenant_id, provider_id, object_type, object_id) DO UPDATE SET
    updated_at = EXCLUDED.updated_at, application_count = EXCLUDED.application_count,
    snapshot = EXCLUDED.snapshot, vector = EXCLUDED.vector`

// EraseLeadSQL removes an erased lead's directory rows (@object_id, the
// email; every provider's when @provider_id is NULL), under EventLockSQL
// like the erasure of its events' words.
const EraseLeadSQL = `DELETE FROM lead_search WHERE tenant_id = @tenant_id AND object_type = @object_type
    AND object_id = @object_id AND (@provider_id::bigint IS NULL OR provider_id = @provider_id)`
