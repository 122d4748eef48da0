package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// IDHasher turns ids and emails into the names that outlive them: audit
// targets of repairs (HashedID), erasure tombstones (RecordErasureKey,
// LeadErasureKey) and the names of refused sign-ins (SignInAuditName). With
// a key, a name is an HMAC-SHA256 under it, which nobody without the key
// can confirm by hashing a guess such as a customer's email (review 4's
// L5). The store keeps the key, one per database, sealed under the
// encryption key. The zero IDHasher hashes without a key (plain SHA-256):
// names written before the key existed, or by a process without the
// encryption key, are of that form.
type IDHasher struct {
	key []byte
}

// NewIDHasher returns an IDHasher keyed by key.
func NewIDHasher(key []byte) IDHasher { return IDHasher{key: key} }

// LegacyIDHasher names as names were written before the key existed.
var LegacyIDHasher = IDHasher{}

// sum is the HMAC-SHA256 of msg under the key, or its SHA-256 without one.
func (h IDHasher) sum(msg []byte) [sha256.Size]byte {
	if h.key == nil {
		return sha256.Sum256(msg)
	}
	m := hmac.New(sha256.New, h.key)
	m.Write(msg)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// HashedID is an object id as the audit log names it: "#" and the first 16
// hex digits of its hash, enough to tell records apart, not to read.
func (h IDHasher) HashedID(id string) string {
	sum := h.sum([]byte(id))
	return "#" + hex.EncodeToString(sum[:8])
}

// RecordErasureKey is the tombstone key of a provider's record.
func (h IDHasher) RecordErasureKey(tenantID, providerID int64, objectType, objectID string) ErasureKey {
	return ErasureKey{Kind: ErasedRecord, Hash: h.sum(fmt.Appendf(nil, "record\x00%d\x00%d\x00%s\x00%s",
		tenantID, providerID, objectType, objectID))}
}

// LeadErasureKey is the tombstone key of a lead, by its email, normalised.
func (h IDHasher) LeadErasureKey(tenantID int64, email string) ErasureKey {
	return ErasureKey{Kind: ErasedLead, Hash: h.sum(fmt.Appendf(nil, "lead\x00%d\x00%s", tenantID,
		NormalizeEmail(email)))}
}

// SignInAuditName is how the audit log names the email of a refused
// sign-in that checked no real account's password: prefix and a short
// hash, so the append-only log keeps neither attacker-chosen text nor a
// name matching a real operator's, while equal emails still match.
func (h IDHasher) SignInAuditName(prefix, email string) string {
	sum := h.sum([]byte(strings.ToLower(NormalizeEmail(email))))
	return prefix + ":" + hex.EncodeToString(sum[:8])
}
