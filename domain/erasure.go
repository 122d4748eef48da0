package domain

import (
	"context"
	"crypto/sha256"
	"fmt"
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
// its key: the tombstone keeps no id or email.
type ErasureKey struct {
	Kind string
	Hash [sha256.Size]byte
}

// RecordErasureKey is the key of a provider's record.
func RecordErasureKey(tenantID, providerID int64, objectType, objectID string) ErasureKey {
	return ErasureKey{Kind: ErasedRecord, Hash: sha256.Sum256(fmt.Appendf(nil, "record\x00%d\x00%d\x00%s\x00%s",
		tenantID, providerID, objectType, objectID))}
}

// LeadErasureKey is the key of a lead, by its email, normalised.
func LeadErasureKey(tenantID int64, email string) ErasureKey {
	return ErasureKey{Kind: ErasedLead, Hash: sha256.Sum256(fmt.Appendf(nil, "lead\x00%d\x00%s", tenantID,
		NormalizeEmail(email)))}
}

// eventErasureKey is what an event of provider providerID would apply to;
// false when it names nothing.
func eventErasureKey(tenantID, providerID int64, e Event) (ErasureKey, bool) {
	switch {
	case e.Lead != nil && e.Lead.Email != "":
		return LeadErasureKey(tenantID, e.Lead.Email), true
	case e.ObjectID != "":
		return RecordErasureKey(tenantID, providerID, e.Scope.ObjectType, e.ObjectID), true
	}
	return ErasureKey{}, false
}

// ErasureChecker tells which keys were erased after a time.
type ErasureChecker interface {
	// ErasedSince reports, key by key, whether the tenant erased it after
	// since.
	ErasedSince(ctx context.Context, tenantID int64, since time.Time, keys []ErasureKey) ([]bool, error)
}

// DropErased removes from events those that name a record or lead erased
// after d was received, and then blanks d's body as an erase would (nil
// when no event is left, else ErasedBody). It returns the events left and
// how many it dropped.
func DropErased(ctx context.Context, c ErasureChecker, d *Delivery, events []Event) ([]Event, int, error) {
	var keys []ErasureKey
	var at []int
	for i, e := range events {
		if k, ok := eventErasureKey(d.TenantID, d.ProviderID, e); ok {
			keys, at = append(keys, k), append(at, i)
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
