package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	ingestion "github.com/tidemark/tidemark/postgres/ingest"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// setup returns a store on a fresh database with tenant "acme" and its
// standard provider "crm".
func setup(t *testing.T) (*Store, domain.ProviderEndpoint) {
	t.Helper()
	s, err := New(testdb.New(t), testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, newProvider(t, s, "acme", "crm")
}

func newProvider(t *testing.T, s *Store, tenant, provider string) domain.ProviderEndpoint {
	t.Helper()
	ctx := asTestCLI(context.Background())
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

// event builds a contact snapshot event; rev < 0 means no revision.
func event(id, contact string, rev int64, snapshot string) domain.Event {
	e := domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"},
		ObjectID: contact, Snapshot: json.RawMessage(snapshot), Timestamp: "2026-11-29T10:00:00Z"}
	if rev >= 0 {
		e.Revision = &rev
	}
	e.Payload = []byte(fmt.Sprintf(`{"type":"contact.snapshot","data":{"contact_id":%q,"revision":%d,"snapshot":%s}}`, contact, rev, snapshot))
	return e
}

func delivery(p domain.ProviderEndpoint) domain.Delivery {
	return domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
}

// ingest delivers one event and returns its result.
func ingest(t *testing.T, s *Store, p domain.ProviderEndpoint, e domain.Event) domain.Result {
	t.Helper()
	r, err := s.Ingest(context.Background(), delivery(p), p, []domain.Event{e})
	if err != nil {
		t.Fatalf("ingest %s: %v", e.EventID, err)
	}
	return r[0]
}

func record(t *testing.T, s *Store, p domain.ProviderEndpoint, contact string) (rev int64, snapshot string, count int) {
	t.Helper()
	err := s.pool.QueryRow(context.Background(),
		`SELECT revision, snapshot::text, application_count FROM records WHERE tenant_id = $1 AND provider_id = $2 AND object_id = $3`,
		p.TenantID, p.ID, contact).Scan(&rev, &snapshot, &count)
	if err != nil {
		t.Fatalf("record %s: %v", contact, err)
	}
	return rev, snapshot, count
}

func wantOutcome(t *testing.T, got domain.Result, want domain.Outcome) {
	t.Helper()
	if got.Outcome != want {
		t.Fatalf("event %s: outcome %s (%s), want %s", got.EventID, got.Outcome, got.Reason, want)
	}
}

// The fixtures below came with the ingest tests, now in postgres/ingest;
// these tests still use them.

// defaultCounterShards is how many rows share one outcome count.
const defaultCounterShards = ingestion.DefaultCounterShards

// raceTimeout bounds every wait of the race tests, so a lost wake-up or an
// undetected deadlock fails the test instead of hanging it.
const raceTimeout = 30 * time.Second

// racePool opens another pool on the store's database. appName tags its
// backends in pg_stat_activity; the pool is warmed up to maxConns open
// connections so that released goroutines do not queue behind dialing.
func racePool(t *testing.T, s *Store, appName string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(s.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conns := make([]*pgxpool.Conn, 0, maxConns)
	for range maxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	return pool
}

func raceStore(t *testing.T, pool *pgxpool.Pool) *Store {
	t.Helper()
	st, err := New(pool, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// signup builds a lead.signup event as the standard receiver does.
func signup(t *testing.T, id, email, campaign string) domain.Event {
	t.Helper()
	l, err := domain.NormalizeLead(domain.Lead{Email: email, Name: "Ada", Company: "Example", Campaign: campaign, Source: "webinar"})
	if err != nil {
		t.Fatal(err)
	}
	snapshot, _ := json.Marshal(l)
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "lead", Action: "signup"},
		ObjectID: l.Email, Snapshot: snapshot, Payload: snapshot, Lead: &l}
}

// leadCounts returns how many people, accounts, tasks and memberships the
// tenant holds.
func leadCounts(t *testing.T, s *Store, tenantID int64) (people, accounts, tasks, members int) {
	t.Helper()
	err := s.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM people WHERE tenant_id = $1), (SELECT count(*) FROM accounts WHERE tenant_id = $1),
		(SELECT count(*) FROM tasks WHERE tenant_id = $1), (SELECT count(*) FROM campaign_members WHERE tenant_id = $1)`,
		tenantID).Scan(&people, &accounts, &tasks, &members)
	if err != nil {
		t.Fatal(err)
	}
	return
}

// change builds a HubSpot-style property event for contact c-1: property
// set to value at revision (occurredAt). A property of "$created" or
// "$deleted" marks creation or deletion.
func change(id, property, value string, revision int64) domain.Event {
	snapshot := "{}"
	if !strings.HasPrefix(property, "$") {
		v, _ := json.Marshal(value)
		snapshot = fmt.Sprintf(`{%q:%s}`, property, v)
	}
	action := "propertyChange"
	switch property {
	case domain.PropertyCreated:
		action = "creation"
	case domain.PropertyDeleted:
		action = "deletion"
	}
	return domain.Event{EventID: id, Scope: domain.ScopeName{ObjectType: "contact", Action: action},
		ObjectID: "c-1", Revision: &revision, Snapshot: json.RawMessage(snapshot), Property: property,
		Payload: []byte(snapshot)}
}
