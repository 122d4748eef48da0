package citus_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/citustest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/migrations"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/citus"
)

// TestDistribute distributes a migrated database on a real cluster: every
// table with a tenant_id ends distributed by it in one co-location group,
// the reference tables are copied to every node, each foreign key is back
// as it was, a second run changes nothing, and a tenant's rows of
// different tables land on the same worker.
func TestDistribute(t *testing.T) {
	t.Parallel()
	c := citustest.Start(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, io.Discard); err != nil {
		t.Fatal(err)
	}
	keysBefore := foreignKeys(t, pool)

	r, err := citus.Distribute(ctx, pool, citus.Options{ShardCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.Workers != 2 || !slices.Equal(r.Reference, citus.ReferenceTables) || r.Already != 0 {
		t.Fatalf("report %+v: want 2 workers, reference tables %v, none already done", r, citus.ReferenceTables)
	}
	tenantTables := queryStrings(t, pool, `
SELECT c.relname FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id')
  AND c.relname <> ALL ($1)
ORDER BY 1`, citus.ReferenceTables)
	if !slices.Equal(r.Distributed, tenantTables) {
		t.Fatalf("distributed %v\nwant every tenant table %v", r.Distributed, tenantTables)
	}
	if got := queryStrings(t, pool, `
SELECT DISTINCT colocationid::text FROM pg_dist_partition WHERE partmethod = 'h'`); len(got) != 1 {
		t.Errorf("distributed tables in co-location groups %v, want one", got)
	}
	if got := queryStrings(t, pool, `
SELECT table_name::text FROM citus_tables WHERE citus_table_type = 'reference' ORDER BY 1`); !slices.Equal(got, []string{"admin_tokens", "app_installs", "app_oauth_states", "app_secrets", "app_unrouted", "app_unrouted_samples", "apps", "enabled_admins", "id_hash_key", "sso_config", "sso_rules", "tenants", "users"}) {
		t.Errorf("reference tables %v", got)
	}
	if got := foreignKeys(t, pool); !slices.Equal(got, keysBefore) {
		t.Errorf("foreign keys after distributing:\n%v\nbefore:\n%v", got, keysBefore)
	}
	if got := queryStrings(t, pool, `
SELECT logicalrelid::regclass::text FROM pg_dist_partition
WHERE logicalrelid::regclass::text = ANY ($1)`, citus.LocalTables); len(got) != 0 {
		t.Errorf("tables meant to stay on the coordinator are in Citus: %v", got)
	}

	// New sessions compile nothing: a fresh connection sees jit off.
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	var jit string
	err = conn.QueryRow(ctx, `SHOW jit`).Scan(&jit)
	conn.Close(ctx)
	if err != nil || jit != "off" || r.Database == "" {
		t.Errorf("jit in a new session %q (%v), report's database %q: want off", jit, err, r.Database)
	}

	again, err := citus.Distribute(ctx, pool, citus.Options{ShardCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Reference)+len(again.Distributed) != 0 || again.Already != len(tenantTables)+len(citus.ReferenceTables) {
		t.Errorf("second run %+v, want nothing done and %d tables already", again, len(tenantTables)+len(citus.ReferenceTables))
	}

	// A tenant's provider and its secret (two tables) live on one worker.
	var tenantID int64
	if err := pool.QueryRow(ctx, `INSERT INTO tenants (slug, name) VALUES ('acme', 'Acme') RETURNING id`).Scan(&tenantID); err != nil {
		t.Fatal(err)
	}
	var providerID int64
	if err := pool.QueryRow(ctx, `INSERT INTO providers (tenant_id, name, kind) VALUES ($1, 'crm', 'standard') RETURNING id`,
		tenantID).Scan(&providerID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO scopes (tenant_id, provider_id, object_type, action) VALUES ($1, $2, 'contact', 'snapshot')`,
		tenantID, providerID); err != nil {
		t.Fatal(err)
	}
	nodes := queryStrings(t, pool, `
SELECT DISTINCT nodeport::text FROM pg_dist_shard_placement
WHERE shardid IN (SELECT get_shard_id_for_distribution_column(t, $1::bigint) FROM unnest('{providers,scopes}'::regclass[]) AS t)`, tenantID)
	if len(nodes) != 1 {
		t.Errorf("the tenant's providers and scopes shards are on nodes %v, want one", nodes)
	}
}

// firstDistributable is the first schema version Distribute accepts:
// migrations 00042 and 00043 removed the triggers Citus refuses.
const firstDistributable = 43

// TestMigrateAfterDistribute: the migrations after the schema a database
// was distributed with run through the coordinator on the distributed
// tables (as `tidemark migrate` runs them after an upgrade), and the
// tables stay distributed. A migration Citus cannot run distributed fails
// here.
func TestMigrateAfterDistribute(t *testing.T) {
	t.Parallel()
	c := citustest.Start(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, firstDistributable); err != nil {
		t.Fatal(err)
	}
	if _, err := citus.Distribute(ctx, pool, citus.Options{ShardCount: 4}); err != nil {
		t.Fatal(err)
	}
	var applied strings.Builder
	if err := postgres.Migrate(ctx, pool, &applied); err != nil {
		t.Fatalf("migrations after %d on the distributed database: %v", firstDistributable, err)
	}
	sources, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := sources[len(sources)-1].Source.Version; last > firstDistributable && !strings.Contains(applied.String(), "applied migration") {
		t.Errorf("no migration after %d was applied (last is %d): %q", firstDistributable, last, applied.String())
	}
	if got := queryStrings(t, pool, `
SELECT logicalrelid::regclass::text FROM pg_dist_partition WHERE logicalrelid::regclass::text IN ('records', 'accepted_revisions')
ORDER BY 1`); !slices.Equal(got, []string{"accepted_revisions", "records"}) {
		t.Errorf("distributed after migrating: %v", got)
	}
}

// TestDistributeWithoutCitus: a database without the extension gets an
// error saying what to do, and is left as it was.
func TestDistributeWithoutCitus(t *testing.T) {
	t.Parallel()
	testdb.SkipOnCitus(t, "this is the database without Citus")
	_, err := citus.Distribute(context.Background(), testdb.New(t), citus.Options{})
	if domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("error %v, want EINVALID", err)
	}
}

// foreignKeys are the schema's foreign keys, without those of the shards
// of reference tables that the coordinator holds (apps' keys to apps and
// tenants).
func foreignKeys(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool, `
SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint c
WHERE contype = 'f' AND connamespace = 'public'::regnamespace AND conparentid = 0
  AND NOT EXISTS (SELECT FROM pg_dist_shard s WHERE c.conrelid::regclass::text = s.logicalrelid::regclass::text || '_' || s.shardid)
ORDER BY 1`)
}

func queryStrings(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
