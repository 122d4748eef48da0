package pg

// BehindRetentionSQL tells whether the destination d (the alias) of the
// tenant @tenant_id has lost changes to the feed's retention: the feed's
// oldest retained change, or with none its head, is past the first change
// after d's cursor. Only a paused or failing destination falls behind so
// (postgres/maintain keeps what an active one has not taken). The tenant
// is the parameter, not d's column, so that Citus routes the subqueries.
const BehindRetentionSQL = `d.cursor < coalesce(
           (SELECT min(c.position) FROM changes c WHERE c.tenant_id = @tenant_id) - 1,
           (SELECT h.position FROM change_heads h WHERE h.tenant_id = @tenant_id), 0)`
