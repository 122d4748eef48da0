package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/snapshot"
)

// ReplayWindow is how far a signed delivery's timestamp may be from the
// clock: a captured delivery cannot be replayed later than this.
const ReplayWindow = 5 * time.Minute

// outsideWindow returns how far sent is from now, and whether that is more
// than ReplayWindow either way.
func outsideWindow(now, sent time.Time) (time.Duration, bool) {
	skew := now.Sub(sent)
	return skew, skew > ReplayWindow || skew < -ReplayWindow
}

// skewText says how far a timestamp is from the clock, without printing
// the saturated duration of an absurd one.
func skewText(d time.Duration) string {
	if d = d.Abs(); d < 0 || d > 100*365*24*time.Hour {
		return "years"
	}
	return d.Round(time.Second).String()
}

// macs computes sign(secret) for every active secret before anything is
// compared; sign returns nil for a secret it cannot use.
func macs(secrets []string, sign func(secret string) []byte) [][]byte {
	out := make([][]byte, 0, len(secrets))
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		if mac := sign(secret); mac != nil {
			out = append(out, mac)
		}
	}
	return out
}

// matchAny reports whether any signature sent equals any expected MAC. Every
// pair is compared, each in constant time, so timing reveals neither which
// secret matched nor how much of a signature was right.
func matchAny(sent, expected [][]byte) bool {
	valid := false
	for _, sig := range sent {
		for _, mac := range expected {
			if hmac.Equal(sig, mac) {
				valid = true
			}
		}
	}
	return valid
}

// newURLToken returns a fresh token for a webhook URL's token query
// parameter: 24 random bytes (192 bits), base64url, so it needs no escaping.
func newURLToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokenMatches reports whether token equals any of the active secrets.
// Both sides are hashed, so each comparison is constant time whatever the
// lengths, and every secret is compared, so timing reveals neither which
// one matched nor how much of the token was right.
func tokenMatches(token string, secrets []string) bool {
	got := sha256.Sum256([]byte(token))
	expected := macs(secrets, func(secret string) []byte {
		want := sha256.Sum256([]byte(secret))
		return want[:]
	})
	return matchAny([][]byte{got[:]}, expected)
}

// fallbackEventID names an event whose own identifiers could not be read by
// its bytes, so a redelivery of the same bytes is still recognised.
func fallbackEventID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compactSnapshot returns the compact form of the JSON object raw (already
// checked to be one), or why it cannot be stored: PostgreSQL's jsonb has no
// NUL character. field names raw in the reason.
func compactSnapshot(field string, raw []byte) (json.RawMessage, string) {
	if bytes.Contains(raw, []byte(`\u0000`)) {
		return nil, field + " contains a NUL character (\\u0000), which cannot be stored"
	}
	var compact bytes.Buffer
	json.Compact(&compact, raw)
	return compact.Bytes(), ""
}

// printable reports whether s has only printable characters.
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool { return !unicode.IsPrint(c) })
}

// surroundingSpace reports whether s starts or ends with white space.
func surroundingSpace(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}

// resultJSON is one event's outcome in the JSON answer of the kinds that
// answer with outcomes.
type resultJSON struct {
	EventID         string         `json:"event_id"`
	Outcome         domain.Outcome `json:"outcome"`
	ContactID       string         `json:"contact_id,omitempty"`
	ObjectType      string         `json:"object_type,omitempty"`
	ObjectID        string         `json:"object_id,omitempty"`
	Revision        *int64         `json:"revision"`
	CurrentRevision *int64         `json:"current_revision"`
	Reason          string         `json:"reason,omitempty"`
}

// RespondJSON answers 200 with the delivery's id and each event's outcome:
// the answer of the JSON kinds, and of a replay whatever its kind.
func RespondJSON(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	out := make([]resultJSON, len(results))
	for i, r := range results {
		out[i] = resultJSON{EventID: r.EventID, Outcome: r.Outcome, Revision: r.Revision, CurrentRevision: r.CurrentRevision}
		if r.ObjectType == domain.ContactType {
			out[i].ContactID = r.ObjectID
		} else {
			out[i].ObjectType, out[i].ObjectID = r.ObjectType, r.ObjectID
		}
		out[i].Reason = r.Reason
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]any{"delivery_id": deliveryID, "results": out})
}

// ShellQuote quotes s as one POSIX shell word. Endpoints come from the
// request's Host header, so snippets quote rather than trust them.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellWord leaves s bare when the shell would read it as is, and quotes it
// otherwise.
func ShellWord(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:@%+=,", c)) {
			return ShellQuote(s)
		}
	}
	return s
}

// sampleContact is the record a console test event writes.
const sampleContact = snapshot.TestRecordID

// sampleTime is the fixed time of the sample bodies in shell snippets, so
// the page shows the same snippet every time.
var sampleTime = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
