package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// TestErasedRecordIsNotReapplied (M5): a delivery queued before its
// record was erased is stored without the erased record's events (and
// without its body); one received after the erase applies.
func TestErasedRecordIsNotReapplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	applied := b.delivery("e-1", "c-1", 1)
	if _, err := b.store.Ingest(ctx, applied.Delivery, b.ep, applied.Events); err != nil {
		t.Fatal(err)
	}
	queued := b.delivery("e-2", "c-1", 2)
	queued.Delivery.Body = queued.Events[0].Payload
	b.enqueue(queued)
	if _, err := b.store.EraseRecord(ctx, b.ep.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}); err != nil {
		t.Fatal(err)
	}
	b.work(1)
	b.await(`SELECT count(*) FROM deliveries WHERE tenant_id = $1`, 2)
	if n := b.count(`SELECT count(*) FROM records WHERE tenant_id = $1`); n != 0 {
		t.Fatalf("the erased record is back: %d records", n)
	}
	if n := b.count(`SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND body IS NOT NULL`); n != 0 {
		t.Fatalf("%d bodies of the erased record stored", n)
	}
	time.Sleep(10 * time.Millisecond)
	b.enqueue(b.delivery("e-3", "c-1", 3))
	b.await(`SELECT count(*) FROM records WHERE tenant_id = $1`, 1)
}
