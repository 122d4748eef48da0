package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
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
