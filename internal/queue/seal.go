package queue

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// Messages are sealed so that NATS access alone neither forges nor reads a
// delivery (security review 3, H1): the envelope is encrypted with
// AES-256-GCM, then the ciphertext, the subject and the tenant and provider
// it is for are authenticated with HMAC-SHA256, both under keys derived
// from TIDEMARK_ENCRYPTION_KEY's keyring. serve seals with the first key;
// a worker opens with whichever key of its keyring the message names, so a
// rekey keeps working while the old key stays configured.
const (
	infoMAC  = "tidemark queue mac v1"
	infoSeal = "tidemark queue seal v1"
	infoID   = "tidemark queue key id v1"
)

// Header names of a sealed message.
const (
	headerKey      = "Tidemark-Key"      // the id of the sealing key
	headerTenant   = "Tidemark-Tenant"   // "<id> <slug>": the tenant the message was sealed for
	headerProvider = "Tidemark-Provider" // "<id> <name>"
	headerMAC      = "Tidemark-Mac"      // base64 of the HMAC
)

// queueKey is one key of the keyring, derived for the queue.
type queueKey struct {
	id   string
	mac  []byte
	aead cipher.AEAD
}

// keyring is the queue's keys, the first sealing.
type keyring []queueKey

// newKeyring derives the queue's keys from the raw keys of
// TIDEMARK_ENCRYPTION_KEY.
func newKeyring(raw [][]byte) (keyring, error) {
	if len(raw) == 0 {
		return nil, errors.New("the delivery queue needs TIDEMARK_ENCRYPTION_KEY: queued messages are signed and encrypted with it")
	}
	var ring keyring
	for i, k := range raw {
		if len(k) < 32 {
			return nil, fmt.Errorf("queue key %d has %d bytes, want 32", i+1, len(k))
		}
		var qk queueKey
		var err error
		if qk.mac, err = hkdf.Key(sha256.New, k, nil, infoMAC, 32); err != nil {
			return nil, err
		}
		seal, err := hkdf.Key(sha256.New, k, nil, infoSeal, 32)
		if err != nil {
			return nil, err
		}
		id, err := hkdf.Key(sha256.New, k, nil, infoID, 8)
		if err != nil {
			return nil, err
		}
		qk.id = hex.EncodeToString(id)
		block, err := aes.NewCipher(seal)
		if err != nil {
			return nil, err
		}
		if qk.aead, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
		ring = append(ring, qk)
	}
	return ring, nil
}

// claim is whom a message is for, as its sealer said.
type claim struct {
	TenantID     int64
	TenantSlug   string
	ProviderID   int64
	ProviderName string
}

// bound is what the MAC (and the cipher's additional data) binds the
// message to besides its bytes: its subject and its claim. Lengths prefix
// each part, so that no two different bindings give the same bytes.
func bound(subject string, c claim) []byte {
	var b []byte
	for _, part := range []string{"tidemark queue v1", subject, strconv.FormatInt(c.TenantID, 10), c.TenantSlug,
		strconv.FormatInt(c.ProviderID, 10), c.ProviderName} {
		b = strconv.AppendInt(b, int64(len(part)), 10)
		b = append(b, ':')
		b = append(b, part...)
	}
	return b
}

func (k queueKey) sum(subject string, c claim, data []byte) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write(bound(subject, c))
	m.Write(data)
	return m.Sum(nil)
}

// seal returns the message of plain, for c, to publish on subject.
func (r keyring) seal(subject string, c claim, plain []byte) *nats.Msg {
	k := r[0]
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	rand.Read(nonce)
	data := k.aead.Seal(nonce, nonce, plain, bound(subject, c))
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	msg.Header.Set(headerKey, k.id)
	msg.Header.Set(headerTenant, strconv.FormatInt(c.TenantID, 10)+" "+c.TenantSlug)
	msg.Header.Set(headerProvider, strconv.FormatInt(c.ProviderID, 10)+" "+c.ProviderName)
	msg.Header.Set(headerMAC, base64.StdEncoding.EncodeToString(k.sum(subject, c, data)))
	return msg
}

// errUnsealed is a message the worker refuses: not sealed by a serve
// of this keyring, or altered since.
type errUnsealed struct{ why string }

func (e errUnsealed) Error() string { return "refused, not applied: " + e.why }

// open verifies a message's MAC before anything else, then decrypts it; it
// returns the plain envelope and whom it is for.
func (r keyring) open(subject string, header nats.Header, data []byte) ([]byte, claim, error) {
	var c claim
	mac, err := base64.StdEncoding.DecodeString(header.Get(headerMAC))
	if err != nil || len(mac) == 0 {
		return nil, c, errUnsealed{"the message is not signed (not published by tidemark serve)"}
	}
	id := header.Get(headerKey)
	var k *queueKey
	for i := range r {
		if r[i].id == id {
			k = &r[i]
		}
	}
	if k == nil {
		return nil, c, errUnsealed{fmt.Sprintf("the message is signed with key id %q, which is not among TIDEMARK_ENCRYPTION_KEY's keys", id)}
	}
	var ok bool
	if c.TenantID, c.TenantSlug, ok = idName(header.Get(headerTenant)); ok {
		c.ProviderID, c.ProviderName, ok = idName(header.Get(headerProvider))
	}
	if !ok || !hmac.Equal(mac, k.sum(subject, c, data)) {
		return nil, c, errUnsealed{"the message's signature does not match (edited, moved to another subject, or not published by tidemark serve)"}
	}
	n := k.aead.NonceSize()
	if len(data) < n {
		return nil, c, errUnsealed{"the message is too short"}
	}
	plain, err := k.aead.Open(nil, data[:n], data[n:], bound(subject, c))
	if err != nil {
		return nil, c, errUnsealed{"the message does not decrypt"}
	}
	return plain, c, nil
}

// idName splits "<id> <name>".
func idName(s string) (int64, string, bool) {
	idText, name, ok := strings.Cut(s, " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	return id, name, ok && err == nil
}
