// Package whsig is a stand-in with the signatures of branch egress, which
// replaces it when merged.
package whsig

import (
	"crypto/rand"
	"encoding/base64"
)

// NewSecret returns a new Standard Webhooks signing secret, whsec_ and the
// base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}
