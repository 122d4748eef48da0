package ingest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// TestEndpointLookupReadsOneShard: on Citus an endpoint is read from the
// one shard of its tenant, not from every shard of the providers,
// secrets and scopes tables, which with many tenants' first deliveries at
// once took most of a delivery's budget each (docs/scale.md).
func TestEndpointLookupReadsOneShard(t *testing.T) {
	if !testdb.OnCitus() {
		t.Skip("plain PostgreSQL has no shards: make test-citus runs this on a cluster")
	}
	s, p := setup(t)
	rows, err := s.Pool().Query(context.Background(), "EXPLAIN (COSTS OFF) "+ingest.EndpointSQL,
		pgx.NamedArgs{"tenant_id": p.TenantID, "provider": p.Name})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(plan, func(line string) bool { return strings.TrimSpace(line) == "Task Count: 1" }) {
		t.Errorf("the endpoint lookup is not sent to one shard:\n%s", strings.Join(plan, "\n"))
	}
}
