package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// TestDeliveryLookupIsTenantFiltered: a delivery is found by id only in
// its own tenant, whatever clock stamped it.
func TestDeliveryLookupIsTenantFiltered(t *testing.T) {
	t.Parallel()
	s, p := setup(t)
	other := newProvider(t, s, "other", "crm")
	d := delivery(p)
	d.ReceivedAt = time.Now().Add(-3 * time.Hour) // another node's clock: outside the id's hour
	// Before 03:00 UTC that is yesterday, older than a new database's days.
	if _, err := s.EnsurePartitions(context.Background(), d.ReceivedAt, PartitionsAhead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(context.Background(), d, p, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Delivery(context.Background(), p.TenantID, d.ID)
	if err != nil || got.ID != d.ID || got.TenantSlug != "acme" || got.BodyKept() {
		t.Fatalf("own tenant: %+v %v", got, err)
	}
	if _, err := s.Delivery(context.Background(), other.TenantID, d.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("other tenant: %v, want ENOTFOUND", err)
	}
	if _, err := s.Delivery(context.Background(), p.TenantID, uuid.NewString()); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("unknown id: %v", err)
	}
}
