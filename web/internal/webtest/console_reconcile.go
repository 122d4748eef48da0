package webtest

import (
	"context"
)

// reconcileBroken breaks two invariants of acme by hand (c-1's revision,
// and one person stored twice) and stores a reconciliation's report.
func (e *Env) ReconcileBroken() {
	e.T.Helper()
	ctx := context.Background()
	e.Outcome("acme", "crm", e.Secret, "r1", SnapshotBody("c-1", 1, `{"job_title":"Analyst"}`))
	for _, sql := range []string{
		`UPDATE records SET revision = 7`,
		`INSERT INTO people (tenant_id, email) SELECT id, e FROM tenants, unnest(ARRAY['ann@example.com', 'ANN@example.com']) e WHERE slug = 'acme'`,
	} {
		if _, err := e.Store.Pool().Exec(ctx, sql); err != nil {
			e.T.Fatal(err)
		}
	}
	r, err := e.Store.Reconcile(ctx, 0, 0)
	if err == nil {
		err = e.Store.SaveReconciliation(ctx, r)
	}
	if err != nil {
		e.T.Fatal(err)
	}
}
