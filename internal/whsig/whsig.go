// Package whsig signs outgoing messages as Standard Webhooks
// (standardwebhooks.com): HMAC-SHA256 over "{id}.{unix seconds}.{body}",
// keyed with the base64-decoded part of a "whsec_" secret, sent in the
// webhook-id, webhook-timestamp and webhook-signature headers.
package whsig

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	prefix = "whsec_"
	// The spec's bounds on a symmetric key: 24 to 64 bytes.
	minKey, maxKey = 24, 64
)

// The header names as the spec writes them (http.Header canonicalises
// them).
const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"
)

// NewSecret returns a new signing secret: "whsec_" followed by the padded
// standard base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand crashes the program rather than return an error
	return prefix + base64.StdEncoding.EncodeToString(b)
}

// key decodes a secret. The error never repeats the secret.
func key(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, prefix)
	if !ok {
		return nil, errors.New(`whsig: secret must start with "whsec_"`)
	}
	k, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, errors.New(`whsig: secret must be "whsec_" followed by standard base64`)
	}
	if len(k) < minKey || len(k) > maxKey {
		return nil, fmt.Errorf("whsig: secret key is %d bytes; Standard Webhooks requires %d to %d", len(k), minKey, maxKey)
	}
	return k, nil
}

func mac(key []byte, id string, unix int64, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(unix, 10) + "."))
	m.Write(body)
	return m.Sum(nil)
}

// Sign returns the webhook-signature header value for a message signed
// with every secret given (old and new during a rotation, so that a
// receiver holding either accepts it): "v1,<base64 signature>" for each,
// separated by one space. An invalid secret, no secret, or an id that is
// empty or holds a "." (which would make the signed content ambiguous, as
// the spec warns) is an error.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("whsig: no secret to sign with")
	}
	if id == "" || strings.Contains(id, ".") {
		return "", fmt.Errorf(`whsig: message id %q must be non-empty and hold no "."`, id)
	}
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		k, err := key(secret)
		if err != nil {
			return "", err
		}
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac(k, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

// Setter is where Headers sets the headers: an http.Header, or a
// nats.Header, which keeps their names as the spec writes them.
type Setter interface{ Set(key, value string) }

// Headers sets webhook-id, webhook-timestamp (unix seconds) and
// webhook-signature on h for the message; on error h is left unchanged.
func Headers(h Setter, secrets []string, id string, ts time.Time, body []byte) error {
	sig, err := Sign(secrets, id, ts, body)
	if err != nil {
		return err
	}
	h.Set(headerID, id)
	h.Set(headerTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(headerSignature, sig)
	return nil
}

// Verify checks a message as a receiver would: the three headers present,
// the timestamp within tolerance of now either way (against replays), and
// one v1 signature in the list made with secret, compared in constant time.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	k, err := key(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get(headerID), h.Get(headerTimestamp), h.Get(headerSignature)
	if id == "" || ts == "" || sigs == "" {
		return errors.New("whsig: webhook-id, webhook-timestamp and webhook-signature are required")
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("whsig: webhook-timestamp must be unix seconds")
	}
	if skew := now.Sub(time.Unix(unix, 0)); skew.Abs() > tolerance {
		return fmt.Errorf("whsig: webhook-timestamp is %s from now, more than the %s allowed", skew.Abs().Round(time.Second), tolerance)
	}
	want := mac(k, id, unix, body)
	for _, sig := range strings.Fields(sigs) {
		version, encoded, _ := strings.Cut(sig, ",")
		if version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(encoded); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("whsig: no webhook-signature matches the secret")
}
