package webtest

import (
	"context"
)

// auditLog lists "actor action target: summary" of a tenant's audit
// entries, oldest first.
func (e *Env) AuditLog(tenant string) []string {
	e.T.Helper()
	rows, err := e.Store.Pool().Query(context.Background(), `
SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
WHERE tenant_id = $1 ORDER BY id`, e.Tenant(tenant).ID)
	if err != nil {
		e.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
