package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// RecordWithRevisionSQL stores record $3 of tenant $1 and provider $2 with
// its accepted revision, as ingest would.
const RecordWithRevisionSQL = `
WITH r AS (
    INSERT INTO records (tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event)
    VALUES ($1, $2, 'contact', $3, 1, '{"name":"late"}', 'e') RETURNING *)
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id)
SELECT tenant_id, provider_id, object_type, object_id, revision, snapshot, last_applied_event FROM r`

// SlowAndFast runs insert for "slow" in a transaction it leaves open,
// then for "fast" on its own: the slow one drew its id first and commits
// (or rolls back, at the test's end) after the fast one.
func SlowAndFast(t testing.TB, pool *pgxpool.Pool, p domain.ProviderEndpoint, insert string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	slow, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Rollback(ctx) })
	if _, err := slow.Exec(ctx, insert, p.TenantID, p.ID, "slow"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, insert, p.TenantID, p.ID, "fast"); err != nil {
		t.Fatal(err)
	}
	return slow
}
