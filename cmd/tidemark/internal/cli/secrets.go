package cli

import (
	"bufio"
	"fmt"
	"strings"
)

// NewKeyUsage is the usage of --new-key, on every command that seals a
// secret.
const NewKeyUsage = "seal the secret under TIDEMARK_ENCRYPTION_KEY's first key even though the secrets in use are " +
	"under another key (moving to a new key; then run tidemark secrets rekey)"

// SecretLine reads a secret from the first line of r, trimmed.
func SecretLine(r *bufio.Reader, what string) (string, error) {
	line, err := r.ReadString('\n')
	secret := strings.TrimSpace(line)
	if secret == "" && err != nil {
		return "", fmt.Errorf("no %s on standard input: %w", what, err)
	}
	if secret == "" {
		return "", fmt.Errorf("the first line of standard input is empty; it must hold the %s", what)
	}
	return secret, nil
}
