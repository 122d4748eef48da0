package pg

// BehindRetentionSQL and BehindRetentionOfTenantSQL tell whether the
// destination d (the alias) has lost changes to the feed's retention: the
// feed's oldest retained change, or with none its head, is past the first
// change after d's cursor. Only a paused or failing destination falls
// behind so (postgres/maintain keeps what an active one has not taken).
// Citus routes the subqueries by d.tenant_id where d is filtered by its
// tenant in WHERE (BehindRetentionSQL), and only by the parameter
// @tenant_id where d is joined to a CTE (BehindRetentionOfTenantSQL).
const (
	BehindRetentionSQL = `d.cursor < coalesce(
           (SELECT min(c.position) FROM changes c WHERE c.tenant_id = d.tenant_id) - 1,
           (SELECT h.position FROM change_heads h WHERE h.tenant_id = d.tenant_id), 0)`
	BehindRetentionOfTenantSQL = `d.cursor < coalesce(
           (SELECT min(c.position) FROM changes c WHERE c.tenant_id = @tenant_id) - 1,
           (SELECT h.position FROM change_heads h WHERE h.tenant_id = @tenant_id), 0)`
)

// DestinationSelectsSQL tells whether the destination d selects the change
// c: its provider, its object type, and one of its types, a pattern being
// a type or a family such as record.* (stream.CheckTypes).
const DestinationSelectsSQL = `(d.provider_id IS NULL OR c.provider_id = d.provider_id)
      AND (d.object_type IS NULL OR c.object_type = d.object_type)
      AND EXISTS (SELECT FROM unnest(d.types) t WHERE t = c.type OR (right(t, 2) = '.*' AND starts_with(c.type, left(t, -1))))`
