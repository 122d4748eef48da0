package queue_test

import (
	"context"
	"crypto/sha256"
	"fmt"
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

// TestErasureTombstonesAreKeyed (review 4's L5): an erase's tombstone is
// not the unkeyed SHA-256 of the record's key, which anyone could confirm
// by hashing a guess, yet the delivery queued before the erase is still
// dropped; so is one queued before a tombstone written unkeyed, as before
// the key existed.
func TestErasureTombstonesAreKeyed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	unkeyed := func(id string) []byte {
		sum := sha256.Sum256(fmt.Appendf(nil, "record\x00%d\x00%d\x00contact\x00%s", b.ep.TenantID, b.ep.ID, id))
		return sum[:]
	}
	applied := b.delivery("e-1", "c-1", 1)
	if _, err := b.store.Ingest(ctx, applied.Delivery, b.ep, applied.Events); err != nil {
		t.Fatal(err)
	}
	b.enqueue(b.delivery("e-2", "c-1", 2))
	b.enqueue(b.delivery("e-3", "c-2", 1))
	if _, err := b.store.EraseRecord(ctx, b.ep.TenantID, domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}); err != nil {
		t.Fatal(err)
	}
	pool := b.store.Pool()
	var plain int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM erasure_tombstones WHERE tenant_id = $1 AND key_hash = $2`,
		b.ep.TenantID, unkeyed("c-1")).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("%d tombstones of c-1 are its unkeyed hash (%v), want a keyed one", plain, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO erasure_tombstones (tenant_id, kind, key_hash) VALUES ($1, 'record', $2)`,
		b.ep.TenantID, unkeyed("c-2")); err != nil {
		t.Fatal(err)
	}
	b.work(1)
	b.await(`SELECT count(*) FROM deliveries WHERE tenant_id = $1`, 3)
	if n := b.count(`SELECT count(*) FROM records WHERE tenant_id = $1`); n != 0 {
		t.Fatalf("%d erased records are back", n)
	}
}
