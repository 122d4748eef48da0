package webtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AssertNoTenantRows fails t when any table with a tenant_id column but
// the audit log holds a row of tenantID, or when no such table was found.
func AssertNoTenantRows(t *testing.T, pool *pgxpool.Pool, tenantID int64) {
	t.Helper()
	ctx := context.Background()
	rows, _ := pool.Query(ctx, `
SELECT DISTINCT c.table_name FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE c.column_name = 'tenant_id' AND c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
  AND c.table_name <> 'audit_log' ORDER BY 1`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 30 {
		t.Fatalf("tenant tables %v: %v", tables, err)
	}
	for _, table := range tables {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()+" WHERE tenant_id = $1", tenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s holds %d rows of the deleted tenant", table, n)
		}
	}
}
