package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/citus"
)

// Both benchmarks measure the receiver on scratch databases of the server at
// --server-url: openScratch connects, createReceiver makes one ready for the
// receiver, and close drops them all.

// Names of the tenant and providers the load is sent to.
const (
	benchTenant   = "bench"
	benchProvider = "load"  // standard: one contact.snapshot per delivery
	batchProvider = "batch" // HubSpot: batches of events
)

// prepareReceiverDatabase migrates the scratch database (and distributes
// it on a Citus cluster) and creates the
// bench tenant with a standard and a HubSpot provider, returning their
// signing secrets.
func prepareReceiverDatabase(ctx context.Context, dbURL string, key []byte, distribute bool) (standard, hubspot string, err error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return "", "", err
	}
	defer pool.Close()
	store, err := postgres.New(pool, key)
	if err != nil {
		return "", "", err
	}
	if err := postgres.Migrate(ctx, pool, io.Discard); err != nil {
		return "", "", err
	}
	if distribute { // with Citus' default of 32 shards a table, as in production
		if _, err := citus.Distribute(ctx, pool, citus.Options{}); err != nil {
			return "", "", fmt.Errorf("distribute the scratch database: %w", err)
		}
	}
	t, err := createBenchTenant(ctx, store, benchTenant)
	return t.secret, t.hubspotSecret, err
}

// tenantSecrets is one bench tenant and the signing secrets of its
// providers (benchProvider and batchProvider).
type tenantSecrets struct {
	slug          string
	secret        string // signs deliveries to its standard provider
	hubspotSecret string // the client secret of its HubSpot provider
}

// createBenchTenant creates tenant slug with a standard and a HubSpot
// provider, each with a new secret.
func createBenchTenant(ctx context.Context, store *postgres.Store, slug string) (tenantSecrets, error) {
	ctx = domain.WithActor(ctx, domain.Actor{Kind: domain.ActorCLI, Name: "tidemark-bench"})
	ts := tenantSecrets{slug: slug}
	t, err := store.CreateTenant(ctx, slug, "Bench")
	if err != nil {
		return ts, err
	}
	ts.secret = provider.NewStandardSecret()
	if _, err := store.ConnectProvider(ctx, t.ID, benchProvider, provider.Standard.Name(), ts.secret, nil); err != nil {
		return ts, err
	}
	hubspot, config, err := provider.HubSpot.Setup("", nil)
	if err != nil {
		return ts, err
	}
	if _, err := store.ConnectProvider(ctx, t.ID, batchProvider, provider.HubSpot.Name(), hubspot, config); err != nil {
		return ts, err
	}
	ts.hubspotSecret = hubspot
	return ts, nil
}

// tenantSlug names the i-th bench tenant: the first is the bench tenant
// every command sends to, so that a one-tenant row sends just what it did
// before --tenants; the others are bench-1, bench-2, ...
func tenantSlug(i int) string {
	if i == 0 {
		return benchTenant
	}
	return benchTenant + "-" + strconv.Itoa(i)
}

// benchTenants returns n bench tenants: the one createReceiver made, then
// n-1 more created like it (ingest --tenants).
func (db receiverDatabase) benchTenants(ctx context.Context, n int) ([]tenantSecrets, error) {
	tenants := []tenantSecrets{{slug: benchTenant, secret: db.secret, hubspotSecret: db.hubspotSecret}}
	if n <= 1 {
		return tenants, nil
	}
	pool, err := pgxpool.New(ctx, db.url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	store, err := postgres.New(pool, db.key)
	if err != nil {
		return nil, err
	}
	for i := 1; i < n; i++ {
		t, err := createBenchTenant(ctx, store, tenantSlug(i))
		if err != nil {
			return nil, fmt.Errorf("create bench tenant %d of %d: %w", i+1, n, err)
		}
		tenants = append(tenants, t)
	}
	return tenants, nil
}

// receiverDatabase is a scratch database ready for the receiver.
type receiverDatabase struct {
	url    string
	key    []byte // the receiver's TIDEMARK_ENCRYPTION_KEY
	secret string // signs deliveries to the standard bench provider
	// hubspotSecret is the client secret of the HubSpot bench provider.
	hubspotSecret string
}

// createReceiver creates the scratch database name, migrates it and adds
// the bench tenant and providers under a fresh encryption key.
func createReceiver(ctx context.Context, dbs *scratch.Databases, name string) (receiverDatabase, error) {
	db := receiverDatabase{key: make([]byte, 32)}
	rand.Read(db.key)
	var err error
	if db.url, err = dbs.Create(ctx, name); err != nil {
		return db, err
	}
	db.secret, db.hubspotSecret, err = prepareReceiverDatabase(ctx, db.url, db.key, dbs.OnCitus())
	return db, err
}

// scratchName is a new name for a run's scratch databases.
func scratchName() string { return scratch.Name(randomHex(3)) }
