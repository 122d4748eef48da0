package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// InsertAlertFired inserts a firing alert of tenantID for rule and its
// alert.fired event, as the evaluator writes them, and returns the
// alert's id.
func InsertAlertFired(t testing.TB, pool *pgxpool.Pool, tenantID int64, rule, summary string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := pool.QueryRow(ctx, `
INSERT INTO alerts (tenant_id, rule, summary, value, threshold, window_seconds, started_at)
VALUES ($1, $2, $3, 1, 1, 900, now()) RETURNING id`, tenantID, rule, summary).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO alert_events (tenant_id, alert_id, type, at) VALUES ($1, $2, 'alert.fired', now())`,
		tenantID, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// InsertAlertResolved resolves alert id and inserts its alert.resolved
// event.
func InsertAlertResolved(t testing.TB, pool *pgxpool.Pool, tenantID, id int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE alerts SET resolved_at = now(), resolved_value = 0 WHERE tenant_id = $1 AND id = $2`,
		tenantID, id); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO alert_events (tenant_id, alert_id, type, at) VALUES ($1, $2, 'alert.resolved', now())`,
		tenantID, id); err != nil {
		t.Fatal(err)
	}
}
