package pg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Provider signing secrets are sealed with AES-256-GCM. Beside each
// ciphertext a row keeps the key id (a fingerprint of the key that sealed
// it), so a store holding several keys opens each secret with the right one
// and a missing key is reported as such, and aad_version, which says what
// associated data the secret was sealed with.
const (
	// AADNone: sealed without associated data, before migration 00014.
	AADNone int16 = 0
	// AADProvider: sealed with secretAAD(tenant, provider), so the
	// ciphertext does not open in another provider's row.
	AADProvider int16 = 1
	// AADDestination: a destination's signing secret, sealed with
	// destinationAAD(tenant, destination); ProviderID holds the destination.
	AADDestination int16 = 2
	// AADProviderAPI: the secret of a provider's API credentials (token or
	// client secret), sealed with providerAPIAAD(tenant, provider):
	// neither a signing secret's ciphertext nor another provider's opens
	// in its row. ProviderID holds the provider; ID too (one row each).
	AADProviderAPI int16 = 3
	// AADDestinationNATS: a NATS destination's credentials, sealed with
	// destinationNATSAAD(tenant, destination); ProviderID holds the
	// destination, ID too (one row each).
	AADDestinationNATS int16 = 4
	// AADIDHashKey: the id hash key (idhashkey.go), sealed with
	// idHashKeyAAD; its ids are 0.
	AADIDHashKey int16 = 5
	// AADApp: an app's client secret, sealed with appAAD(app); apps are
	// global, so TenantID is 0 and ProviderID holds the app.
	AADApp int16 = 6
	// AADAppInstallTokens: an app install's OAuth tokens, sealed with
	// appInstallAAD(tenant, install); ProviderID holds the install, ID too
	// (one row each).
	AADAppInstallTokens int16 = 7
	// AADSSO: the SSO client secret (sso_config's one row), sealed with
	// ssoAAD; its ids are 0.
	AADSSO int16 = 8
)

// ErrNoKey is what every operation on provider secrets returns on a store
// opened without keys.
var ErrNoKey = errors.New("provider secrets are encrypted at rest and TIDEMARK_ENCRYPTION_KEY is not set: " +
	"create a key once (openssl rand -base64 32), keep it in your secret manager and set TIDEMARK_ENCRYPTION_KEY from there " +
	"on every node; a database that already holds secrets needs the key they were stored with")

// secretCipher is one key.
type secretCipher struct {
	aead  cipher.AEAD
	keyID string
}

func newSecretCipher(key []byte) (*secretCipher, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("encryption key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("tidemark key id:"), key...))
	return &secretCipher{aead: aead, keyID: hex.EncodeToString(sum[:8])}, nil
}

// Keyring holds a store's keys: the first seals new secrets, every one
// opens the secrets stored under its key id.
type Keyring struct {
	sealer *secretCipher // nil when the store has no keys
	byID   map[string]*secretCipher
	ids    []string // in the order given
}

func NewKeyring(keys [][]byte) (*Keyring, error) {
	k := &Keyring{byID: map[string]*secretCipher{}}
	for i, key := range keys {
		c, err := newSecretCipher(key)
		if err != nil {
			return nil, fmt.Errorf("encryption key %d: %w", i+1, err)
		}
		if k.sealer == nil {
			k.sealer = c
		}
		if k.byID[c.keyID] == nil {
			k.byID[c.keyID] = c
			k.ids = append(k.ids, c.keyID)
		}
	}
	return k, nil
}

// SealedSecret is a provider secret as stored. Its ids name it in logs and
// errors; its plaintext never appears there.
type SealedSecret struct {
	TenantID, ProviderID, ID int64
	KeyID                    string
	AADVersion               int16
	Ciphertext               []byte
}

// Seal encrypts a new secret of a provider under the first key, bound to
// the tenant and provider.
func (k *Keyring) Seal(tenantID, providerID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{TenantID: tenantID, ProviderID: providerID, AADVersion: AADProvider},
		secretAAD(tenantID, providerID), plaintext)
}

// SealDestination encrypts a destination's signing secret under the first
// key, bound to the tenant and destination.
func (k *Keyring) SealDestination(tenantID, destinationID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{TenantID: tenantID, ProviderID: destinationID, AADVersion: AADDestination},
		destinationAAD(tenantID, destinationID), plaintext)
}

// SealProviderAPI encrypts the secret of a provider's API credentials
// under the first key, bound to the tenant and provider.
func (k *Keyring) SealProviderAPI(tenantID, providerID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{TenantID: tenantID, ProviderID: providerID, ID: providerID, AADVersion: AADProviderAPI},
		providerAPIAAD(tenantID, providerID), plaintext)
}

// SealDestinationNATS encrypts a NATS destination's credentials under the
// first key, bound to the tenant and destination.
func (k *Keyring) SealDestinationNATS(tenantID, destinationID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{TenantID: tenantID, ProviderID: destinationID, ID: destinationID, AADVersion: AADDestinationNATS},
		destinationNATSAAD(tenantID, destinationID), plaintext)
}

// SealApp encrypts an app's client secret under the first key, bound to
// the app.
func (k *Keyring) SealApp(appID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{ProviderID: appID, AADVersion: AADApp}, appAAD(appID), plaintext)
}

// SealAppInstallTokens encrypts an app install's tokens under the first
// key, bound to the tenant and install.
func (k *Keyring) SealAppInstallTokens(tenantID, installID int64, plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{TenantID: tenantID, ProviderID: installID, ID: installID, AADVersion: AADAppInstallTokens},
		appInstallAAD(tenantID, installID), plaintext)
}

// SealSSO encrypts the SSO client secret under the first key.
func (k *Keyring) SealSSO(plaintext string) (SealedSecret, error) {
	return k.seal(SealedSecret{AADVersion: AADSSO}, ssoAAD(), plaintext)
}

// seal fills in s's key id and ciphertext: plaintext sealed under the
// first key with aad.
func (k *Keyring) seal(s SealedSecret, aad []byte, plaintext string) (SealedSecret, error) {
	if k.sealer == nil {
		return SealedSecret{}, ErrNoKey
	}
	nonce := make([]byte, k.sealer.aead.NonceSize())
	rand.Read(nonce)
	s.KeyID, s.Ciphertext = k.sealer.keyID, k.sealer.aead.Seal(nonce, nonce, []byte(plaintext), aad)
	return s, nil
}

// ErrMissingKey wraps the error of a secret whose key the store lacks.
var ErrMissingKey = errors.New("no configured encryption key has this key id")

// Open decrypts a stored secret with the key it names and the associated
// data its row implies.
func (k *Keyring) Open(s SealedSecret) (string, error) {
	if k.sealer == nil {
		return "", ErrNoKey
	}
	c := k.byID[s.KeyID]
	if c == nil {
		return "", fmt.Errorf("key id %s: %w (configured: %s)", s.KeyID, ErrMissingKey, strings.Join(k.ids, ", "))
	}
	var aad []byte
	switch s.AADVersion {
	case AADNone:
	case AADProvider:
		aad = secretAAD(s.TenantID, s.ProviderID)
	case AADDestination:
		aad = destinationAAD(s.TenantID, s.ProviderID)
	case AADProviderAPI:
		aad = providerAPIAAD(s.TenantID, s.ProviderID)
	case AADDestinationNATS:
		aad = destinationNATSAAD(s.TenantID, s.ProviderID)
	case AADIDHashKey:
		aad = idHashKeyAAD()
	case AADApp:
		aad = appAAD(s.ProviderID)
	case AADAppInstallTokens:
		aad = appInstallAAD(s.TenantID, s.ProviderID)
	case AADSSO:
		aad = ssoAAD()
	default:
		return "", fmt.Errorf("unknown aad_version %d", s.AADVersion)
	}
	n := c.aead.NonceSize()
	if len(s.Ciphertext) < n {
		return "", errors.New("ciphertext is truncated")
	}
	plain, err := c.aead.Open(nil, s.Ciphertext[:n], s.Ciphertext[n:], aad)
	if err != nil {
		return "", fmt.Errorf("decrypt: %w", err)
	}
	return string(plain), nil
}

// secretAAD is the associated data binding a secret to its tenant and
// provider: a fixed label, then both ids as 8-byte big-endian integers.
func secretAAD(tenantID, providerID int64) []byte {
	return boundAAD("tidemark provider secret v1\x00", tenantID, providerID)
}

// destinationAAD binds a destination's secret to its tenant and
// destination, under a label of its own: a destination's ciphertext never
// opens as a provider's with the same ids.
func destinationAAD(tenantID, destinationID int64) []byte {
	return boundAAD("tidemark destination secret v1\x00", tenantID, destinationID)
}

// providerAPIAAD binds the secret of a provider's API credentials to its
// tenant and provider, under a label of its own.
func providerAPIAAD(tenantID, providerID int64) []byte {
	return boundAAD("tidemark provider api secret v1\x00", tenantID, providerID)
}

// destinationNATSAAD binds a NATS destination's credentials to its tenant
// and destination, under a label of its own.
func destinationNATSAAD(tenantID, destinationID int64) []byte {
	return boundAAD("tidemark destination nats credentials v1\x00", tenantID, destinationID)
}

// appAAD binds an app's client secret to the app, under a label of its
// own; an app has no tenant.
func appAAD(appID int64) []byte {
	return boundAAD("tidemark app secret v1\x00", 0, appID)
}

// ssoAAD binds the SSO client secret to its label.
func ssoAAD() []byte { return boundAAD("tidemark sso client secret v1\x00", 0, 0) }

// appInstallAAD binds an app install's tokens to its tenant and install,
// under a label of its own.
func appInstallAAD(tenantID, installID int64) []byte {
	return boundAAD("tidemark app install tokens v1\x00", tenantID, installID)
}

// boundAAD is label, then the tenant id and the owner's id as 8-byte
// big-endian integers.
func boundAAD(label string, tenantID, ownerID int64) []byte {
	b := make([]byte, 0, len(label)+16)
	b = append(b, label...)
	b = binary.BigEndian.AppendUint64(b, uint64(tenantID))
	return binary.BigEndian.AppendUint64(b, uint64(ownerID))
}

// CanSeal reports whether the keyring has a key, without which no secret
// can be sealed or opened.
func (k *Keyring) CanSeal() bool { return k.sealer != nil }

// SealerID is the key id of the key that seals new secrets.
func (k *Keyring) SealerID() string { return k.sealer.keyID }

// IDs are the key ids the keyring holds, in the order given.
func (k *Keyring) IDs() []string { return k.ids }
