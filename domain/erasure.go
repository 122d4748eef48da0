package domain

import (
	"context"
	"crypto/sha256"
	"time"
)

// Erasure tombstones: every erase records what it erased, by a hash, so
// that a delivery queued before the erase (queued mode) does not bring the
// erased record or lead back when a worker applies it later.

// Kinds of ErasureKey.
const (
	ErasedRecord = "record"
	ErasedLead   = "lead"
)

// ErasureKey names an erased record or lead by a hash of the tenant and
// its key (IDHasher.RecordErasureKey, LeadErasureKey): the tombstone keeps
// no id or email.
type ErasureKey struct {
	Kind string
	Hash [sha256.Size]byte
}

// eventErasureKey is what an event of provider providerID would apply to,
// under h; false when it names nothing.
func eventErasureKey(h IDHasher, tenantID, providerID int64, e Event) (ErasureKey, bool) {
	switch {
	case e.Lead != nil && e.Lead.Email != "":
		return h.LeadErasureKey(tenantID, e.Lead.Email), true
	case e.ObjectID != "":
		return h.RecordErasureKey(tenantID, providerID, e.Scope.ObjectType, e.ObjectID), true
	}
	return ErasureKey{}, false
}

// ErasureChecker tells which keys were erased after a time.
type ErasureChecker interface {
	// ErasureHashers are the hashers tombstones may have been written
	// under: the store's keyed one, and LegacyIDHasher for those written
	// before the key existed or by a process without the encryption key.
	ErasureHashers(ctx context.Context) ([]IDHasher, error)
	// ErasedSince reports, key by key, whether the tenant erased it after
	// since.
	ErasedSince(ctx context.Context, tenantID int64, since time.Time, keys []ErasureKey) ([]bool, error)
}

// DropErased removes from events those that name a record or lead erased
// after d was received, and then blanks d's body as an erase would (nil
// when no event is left, else ErasedBody). It returns the events left and
// how many it dropped.
func DropErased(ctx context.Context, c ErasureChecker, d *Delivery, events []Event) ([]Event, int, error) {
	hashers, err := c.ErasureHashers(ctx)
	if err != nil {
		return nil, 0, err
	}
	var keys []ErasureKey
	var at []int
	for i, e := range events {
		for _, h := range hashers {
			if k, ok := eventErasureKey(h, d.TenantID, d.ProviderID, e); ok {
				keys, at = append(keys, k), append(at, i)
			}
		}
	}
	if len(keys) == 0 {
		return events, 0, nil
	}
	erased, err := c.ErasedSince(ctx, d.TenantID, d.ReceivedAt, keys)
	if err != nil {
		return nil, 0, err
	}
	drop := map[int]bool{}
	for j, gone := range erased {
		if gone {
			drop[at[j]] = true
		}
	}
	if len(drop) == 0 {
		return events, 0, nil
	}
	kept := make([]Event, 0, len(events)-len(drop))
	for i, e := range events {
		if !drop[i] {
			kept = append(kept, e)
		}
	}
	if d.Body != nil {
		d.Body = nil
		if len(kept) > 0 {
			d.Body = []byte(ErasedBody)
		}
	}
	return kept, len(drop), nil
}
