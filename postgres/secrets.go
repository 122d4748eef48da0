package postgres

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/tidemark/tidemark/domain"
)

// secretCipher encrypts provider signing secrets with AES-256-GCM. keyID, a
// fingerprint of the key, is stored beside each ciphertext so that running
// with the wrong key is reported as such rather than as a bad signature.
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

func (c *secretCipher) seal(plaintext string) []byte {
	nonce := make([]byte, c.aead.NonceSize())
	rand.Read(nonce)
	return c.aead.Seal(nonce, nonce, []byte(plaintext), nil)
}

func (c *secretCipher) open(keyID string, ciphertext []byte) (string, error) {
	if keyID != c.keyID {
		return "", domain.Errorf(domain.EINTERNAL, "provider secret was encrypted with another TIDEMARK_ENCRYPTION_KEY (key id %s, this process has %s)", keyID, c.keyID)
	}
	n := c.aead.NonceSize()
	if len(ciphertext) < n {
		return "", fmt.Errorf("provider secret ciphertext is truncated")
	}
	plain, err := c.aead.Open(nil, ciphertext[:n], ciphertext[n:], nil)
	if err != nil {
		return "", fmt.Errorf("decrypt provider secret: %w", err)
	}
	return string(plain), nil
}
