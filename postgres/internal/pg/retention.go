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
