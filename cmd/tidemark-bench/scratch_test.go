package main

import (
	"context"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
)

func TestScratchDatabaseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ server, want string }{
		{"postgres:///postgres?host=/var/run/postgresql&sslmode=disable",
			"postgres:///scratch?host=/var/run/postgresql&sslmode=disable"},
		{"postgres://u:p@db:5432/app", "postgres://u:p@db:5432/scratch"},
		{"postgresql://db/app?dbname=app", "postgresql://db/scratch?dbname=scratch"},
		{"host=/tmp dbname=app", "host=/tmp dbname=app dbname=scratch"},
	} {
		got, err := scratch.URL(c.server, "scratch")
		if err != nil || got != c.want {
			t.Errorf("scratch.URL(%q) = %q, %v; want %q", c.server, got, err, c.want)
		}
	}
}

// The scratch databases the benchmarks measure on are created, prepared for
// the receiver and dropped again.
func TestScratchReceiverDatabase(t *testing.T) {
	t.Parallel()
	testdb.NewURL(t) // skips (or fails under CI=true) when no server answers
	ctx := context.Background()
	dbs, err := scratch.Open(ctx, testdb.ServerURL(t), false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	name := "tidemark_bench_test_" + randomHex(6)
	db, err := createReceiver(ctx, dbs, name)
	if err != nil {
		dbs.Close(ctx)
		t.Fatal(err)
	}
	if len(db.key) != 32 || db.secret == "" {
		t.Errorf("receiver database: key of %d bytes, secret %q", len(db.key), db.secret)
	}
	pool, err := pgxpool.New(ctx, db.url)
	if err != nil {
		t.Fatal(err)
	}
	if len(db.hubspotSecret) != 36 {
		t.Errorf("HubSpot client secret %q", db.hubspotSecret)
	}
	for name, kind := range map[string]string{benchProvider: provider.Standard.Name(), batchProvider: provider.HubSpot.Name()} {
		var providers int
		err = pool.QueryRow(ctx, `SELECT count(*) FROM providers p JOIN tenants t ON t.id = p.tenant_id
			WHERE t.slug = $1 AND p.name = $2 AND p.kind = $3`, benchTenant, name, kind).Scan(&providers)
		if err != nil || providers != 1 {
			t.Errorf("bench provider %s of kind %s: %d rows, %v; want 1", name, kind, providers, err)
		}
	}

	// ingest --tenants: the bench tenant first, then others made like it,
	// each with secrets of its own.
	if one, err := db.benchTenants(ctx, 1); err != nil || len(one) != 1 ||
		one[0] != (tenantSecrets{slug: benchTenant, secret: db.secret, hubspotSecret: db.hubspotSecret}) {
		t.Errorf("benchTenants(1) = %+v, %v", one, err)
	}
	tenants, err := db.benchTenants(ctx, 3)
	if err != nil {
		t.Error(err) // not Fatal: the scratch database is still dropped below
	}
	secrets := map[string]bool{}
	for i, tenant := range tenants {
		if want := []string{"bench", "bench-1", "bench-2"}[i]; tenant.slug != want {
			t.Errorf("tenant %d is %q, want %q", i, tenant.slug, want)
		}
		secrets[tenant.secret], secrets[tenant.hubspotSecret] = true, true
		var providers int
		err = pool.QueryRow(ctx, `SELECT count(*) FROM providers p JOIN tenants t ON t.id = p.tenant_id
			WHERE t.slug = $1 AND (p.name, p.kind) IN (($2, $3), ($4, $5))`, tenant.slug,
			benchProvider, provider.Standard.Name(), batchProvider, provider.HubSpot.Name()).Scan(&providers)
		if err != nil || providers != 2 {
			t.Errorf("tenant %s: %d bench providers, %v; want 2", tenant.slug, providers, err)
		}
	}
	if len(tenants) != 3 || len(secrets) != 6 || secrets[""] {
		t.Errorf("%d tenants with %d distinct secrets: %+v", len(tenants), len(secrets), tenants)
	}
	var all int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM tenants").Scan(&all); err != nil || all != 3 {
		t.Errorf("%d tenants in the database (%v), want 3", all, err)
	}
	pool.Close()

	dbs.Close(ctx)
	admin, err := scratch.Open(ctx, testdb.ServerURL(t), false, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if exists, err := admin.Exists(ctx, name); err != nil || exists {
		t.Errorf("scratch database %s still exists after close (%v)", name, err)
	}
}
