// Package pgtest is the kit of the storage tests: a store on a fresh
// database with the test key, a tenant and its provider, events and
// deliveries to ingest. Only tests import it. It does not import package
// postgres, whose own tests use it too: the store comes from the open
// function the test passes (postgres.New).
package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/migrations"
)

// Key is the test's key for provider secrets.
var Key = []byte("0123456789abcdef0123456789abcdef")

// Store is what the kit needs of a store.
type Store interface {
	domain.TenantService
	domain.ProviderService
	domain.IngestService
	Pool() *pgxpool.Pool
}

// Open opens a store on pool with one key (postgres.New).
type Open[S Store] func(pool *pgxpool.Pool, key []byte) (S, error)

// New returns a store on a fresh database with Key.
func New[S Store](t testing.TB, open Open[S]) S {
	t.Helper()
	return On(t, open, testdb.New(t))
}

// On returns a store on pool with Key.
func On[S Store](t testing.TB, open Open[S], pool *pgxpool.Pool) S {
	t.Helper()
	s, err := open(pool, Key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Setup returns a store on a fresh database with tenant "acme" and its
// standard provider "crm".
func Setup[S Store](t testing.TB, open Open[S]) (S, domain.ProviderEndpoint) {
	t.Helper()
	s := New(t, open)
	return s, Provider(t, s, "acme", "crm")
}

// AsCLI is ctx with the CLI as the actor the audit log records.
func AsCLI(ctx context.Context) context.Context {
	return domain.WithActor(ctx, domain.Actor{Kind: domain.ActorCLI, Name: "test"})
}

// Operator is the operator AsOperator acts as.
var Operator = domain.Actor{Kind: domain.ActorOperator, Name: "ann@example.com", Address: "192.0.2.7"}

// AsOperator is ctx with Operator as the actor the audit log records.
func AsOperator(ctx context.Context) context.Context { return domain.WithActor(ctx, Operator) }

// Provider connects a standard provider to tenant, created if need be,
// and returns its endpoint.
func Provider(t testing.TB, s Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	ctx := AsCLI(context.Background())
	tn, err := s.Tenant(ctx, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		tn, err = s.CreateTenant(ctx, tenant, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectProvider(ctx, tn.ID, provider, "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Endpoint(ctx, tenant, provider)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Event builds a contact snapshot event; rev < 0 means no revision.
func Event(id, contact string, rev int64, snapshot string) domain.Event {
	e := domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"},
		ObjectID: contact, Snapshot: json.RawMessage(snapshot), Timestamp: "2026-11-29T10:00:00Z"}
	if rev >= 0 {
		e.Revision = &rev
	}
	e.Payload = []byte(fmt.Sprintf(`{"type":"contact.snapshot","data":{"contact_id":%q,"revision":%d,"snapshot":%s}}`, contact, rev, snapshot))
	return e
}

// Delivery is a new signed delivery to p, received now.
func Delivery(p domain.ProviderEndpoint) domain.Delivery {
	return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
}

// Ingest delivers one event and returns its result.
func Ingest(t testing.TB, s domain.IngestService, p domain.ProviderEndpoint, e domain.Event) domain.Result {
	t.Helper()
	r, err := s.Ingest(context.Background(), Delivery(p), p, []domain.Event{e})
	if err != nil {
		t.Fatalf("ingest %s: %v", e.EventID, err)
	}
	return r[0]
}

const recordSQL = `
SELECT revision, snapshot::text, application_count FROM records
WHERE tenant_id = @tenant_id AND provider_id = @provider_id AND object_id = @object_id`

// Record reads a contact's stored revision, snapshot and application count.
func Record(t testing.TB, pool *pgxpool.Pool, p domain.ProviderEndpoint, contact string) (rev int64, snapshot string, count int) {
	t.Helper()
	err := pool.QueryRow(context.Background(), recordSQL,
		pgx.NamedArgs{"tenant_id": p.TenantID, "provider_id": p.ID, "object_id": contact}).Scan(&rev, &snapshot, &count)
	if err != nil {
		t.Fatalf("record %s: %v", contact, err)
	}
	return rev, snapshot, count
}

// WantOutcome fails the test unless got has outcome want.
func WantOutcome(t testing.TB, got domain.Result, want domain.Outcome) {
	t.Helper()
	if got.Outcome != want {
		t.Fatalf("event %s: outcome %s (%s), want %s", got.EventID, got.Outcome, got.Reason, want)
	}
}

// MigratedTo is an empty database migrated up to version, with the goose
// provider that takes it further, for a test of what a migration does to
// the rows before it.
func MigratedTo(t testing.TB, version int64) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return pool, p
}
