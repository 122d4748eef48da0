package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
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

// prepareReceiverDatabase migrates the scratch database and creates the
// bench tenant with a standard and a HubSpot provider, returning their
// signing secrets.
func prepareReceiverDatabase(ctx context.Context, dbURL string, key []byte) (standard, hubspot string, err error) {
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

// scratchDatabases creates databases and drops them all at the end.
type scratchDatabases struct {
	admin     *pgx.Conn // creates and drops them, and runs CHECKPOINT
	serverURL string
	keep      bool
	log       io.Writer
	names     []string
}

// openScratch opens the one maintenance connection that creates and drops
// the scratch databases on serverURL. With keep, close leaves them in place
// and says where they are.
func openScratch(ctx context.Context, serverURL string, keep bool, log io.Writer) (*scratchDatabases, error) {
	admin, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil, fmt.Errorf("connect to --server-url: %w", err)
	}
	return &scratchDatabases{admin: admin, serverURL: serverURL, keep: keep, log: log}, nil
}

// close drops the scratch databases (unless kept) and the connection.
func (s *scratchDatabases) close(ctx context.Context) {
	s.dropAll(ctx)
	s.admin.Close(context.WithoutCancel(ctx))
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
func (s *scratchDatabases) createReceiver(ctx context.Context, name string) (receiverDatabase, error) {
	db := receiverDatabase{key: make([]byte, 32)}
	rand.Read(db.key)
	var err error
	if db.url, err = s.create(ctx, name); err != nil {
		return db, err
	}
	db.secret, db.hubspotSecret, err = prepareReceiverDatabase(ctx, db.url, db.key)
	return db, err
}

// scratchName is a new name for a run's scratch databases, which its
// commands suffix: when and a random part, so runs never collide.
func scratchName() string {
	return fmt.Sprintf("tidemark_bench_%d_%s", time.Now().Unix(), randomHex(3))
}

func (s *scratchDatabases) create(ctx context.Context, name string) (string, error) {
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create scratch database %s: %w", name, err)
	}
	s.names = append(s.names, name)
	return databaseURL(s.serverURL, name)
}

// dropAll runs even after an interrupt, so it uses a context of its own.
func (s *scratchDatabases) dropAll(ctx context.Context) {
	if s.keep {
		for _, name := range s.names {
			url, _ := databaseURL(s.serverURL, name)
			fmt.Fprintf(s.log, "kept scratch database %s (%s)\n", name, url)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, name := range s.names {
		// FORCE ends connections a killed child may have left behind.
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(s.log, "could not drop scratch database %s: %v\n", name, err)
		}
	}
}

// databaseURL points a connection string at another database on the same
// server, in URL or keyword/value form.
func databaseURL(serverURL, name string) (string, error) {
	if strings.HasPrefix(serverURL, "postgres://") || strings.HasPrefix(serverURL, "postgresql://") {
		u, err := url.Parse(serverURL)
		if err != nil {
			return "", fmt.Errorf("--server-url: %w", err)
		}
		q := u.Query()
		if q.Has("dbname") {
			q.Set("dbname", name)
			u.RawQuery = q.Encode()
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return strings.TrimSpace(serverURL) + " dbname=" + name, nil
}

// checkpoint flushes dirty buffers before a measurement so it does not pay
// for the previous one's writes. Best effort: it needs pg_checkpoint rights.
func checkpoint(ctx context.Context, admin *pgx.Conn) {
	admin.Exec(ctx, "CHECKPOINT")
}
