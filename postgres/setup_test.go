package postgres

import (
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// The package's names for the test kit (postgres/internal/pgtest).
var (
	testKey     = pgtest.Key
	event       = pgtest.Event
	delivery    = pgtest.Delivery
	wantOutcome = pgtest.WantOutcome
	asTestCLI   = pgtest.AsCLI
	migratedTo  = pgtest.MigratedTo
)

// setup returns a store on a fresh database with tenant "acme" and its
// standard provider "crm".
func setup(t *testing.T) (*Store, domain.ProviderEndpoint) {
	t.Helper()
	return pgtest.Setup(t, New)
}

func newProvider(t *testing.T, s *Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	return pgtest.Provider(t, s, tenant, provider)
}

// ingestEvent delivers one event and returns its result.
func ingestEvent(t *testing.T, s *Store, p domain.ProviderEndpoint, e domain.Event) domain.Result {
	t.Helper()
	return pgtest.Ingest(t, s, p, e)
}

func record(t *testing.T, s *Store, p domain.ProviderEndpoint, contact string) (rev int64, snapshot string, count int) {
	t.Helper()
	return pgtest.Record(t, s.pool, p, contact)
}

// storeOn opens a store on url whose connections carry application_name
// app, so that pg_stat_activity tells them apart.
func storeOn(t testing.TB, url, app string, conns int32) *Store {
	t.Helper()
	return pgtest.StoreOn(t, New, url, app, conns)
}

var percentile = pgtest.Percentile
