package webtest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain/alerting"
)

// FireAlert stores an alert of tenant as the evaluator does, firing since
// started (resolved at resolved unless nil), and returns its id.
func FireAlert(e *Env, tenant string, rule alerting.Rule, provider, summary string, started time.Time, resolved *time.Time) int64 {
	e.T.Helper()
	var id int64
	err := e.Store.Pool().QueryRow(context.Background(), `
INSERT INTO alerts (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, started_at, resolved_at, resolved_value)
VALUES (@tenant_id, @rule, @provider, @provider, @summary, 21, 20, 300, @started_at, @resolved_at,
        CASE WHEN @resolved_at::timestamptz IS NOT NULL THEN 0 END)
RETURNING id`, pgx.NamedArgs{"tenant_id": e.Tenant(tenant).ID, "rule": rule, "provider": provider, "summary": summary,
		"started_at": started, "resolved_at": resolved}).Scan(&id)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}
