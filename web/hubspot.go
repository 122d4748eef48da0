package web

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// HubSpot app webhooks (Webhooks API v3). A delivery is a JSON array of up to
// 100 events, signed with the app's client secret (the provider's active
// secrets; any of them matches):
//
//   - v3 (always accepted): X-HubSpot-Signature-v3 is
//     base64(HMAC-SHA256(secret, method + uri + body + timestamp)) with
//     X-HubSpot-Request-Timestamp (epoch milliseconds) within replayWindow.
//     uri is the URL HubSpot called: the public base URL + r.URL.RequestURI(),
//     with HubSpot's few percent-encodings decoded.
//   - v1 (only when config["allow_v1"] == "true"): X-HubSpot-Signature is
//     hex(SHA-256(secret + body)) with X-HubSpot-Signature-Version: v1. It has
//     no timestamp, so it gives no replay protection.
//
// When the v3 header is present it alone decides, so a replayed request whose
// v3 timestamp expired cannot fall back to its still-valid v1 signature.

// hubspotMaxEvents is the largest batch HubSpot sends.
const hubspotMaxEvents = 100

// hubspotURI is the request URI as HubSpot saw it: the public base URL from
// the request context (else "http://" + Host) followed by the request URI,
// with the percent-encodings HubSpot decodes before signing decoded.
func hubspotURI(r *http.Request) string {
	base, _ := r.Context().Value(publicBaseKey{}).(string)
	if base == "" {
		base = "http://" + r.Host
	}
	return hubspotDecodeURI(strings.TrimRight(base, "/") + r.URL.RequestURI())
}

// hubspotURIDecoder decodes exactly the percent-encodings HubSpot's v3
// signature decodes; every other escape (%20, %2B, ...) stays encoded.
var hubspotURIDecoder = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$",
	"%27", "'", "%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
)

func hubspotDecodeURI(uri string) string { return hubspotURIDecoder.Replace(uri) }

// hubspotSetup checks a new hubspot provider: the secret is the app's client
// secret (generated, in HubSpot's 36-character form, when empty) and
// config["allow_v1"] is "", "true" or "false" (default "false").
func hubspotSetup(secret string, config map[string]string) (string, map[string]string, error) {
	out := make(map[string]string, len(config)+1)
	for k, v := range config {
		out[k] = v
	}
	switch out["allow_v1"] {
	case "":
		out["allow_v1"] = "false"
	case "true", "false":
	default:
		return "", nil, domain.Errorf(domain.EINVALID, `allow_v1 must be "true" or "false" for a hubspot provider; got %q`, out["allow_v1"])
	}
	if secret == "" {
		return NewHubSpotSecret(), out, nil
	}
	if len(secret) < 8 || strings.ContainsFunc(secret, func(c rune) bool { return !unicode.IsPrint(c) }) || surroundingSpace(secret) {
		return "", nil, domain.Errorf(domain.EINVALID,
			"--secret must be the HubSpot app's client secret: at least 8 printable characters without surrounding spaces (or leave it out to generate one, for example %s)",
			NewHubSpotSecret())
	}
	return secret, out, nil
}

// NewHubSpotSecret returns a random secret shaped like a HubSpot client
// secret (36 characters, UUID form).
func NewHubSpotSecret() string {
	var b [16]byte
	rand.Read(b[:])
	u, _ := uuid.FromBytes(b[:])
	return u.String()
}

// SignHubSpotV3 returns the X-HubSpot-Signature-v3 value for a request.
// timestamp is the X-HubSpot-Request-Timestamp header exactly as sent.
func SignHubSpotV3(secret, method, uri string, body []byte, timestamp string) string {
	return base64.StdEncoding.EncodeToString(hubspotV3MAC(secret, method, uri, body, timestamp))
}

func hubspotV3MAC(secret, method, uri string, body []byte, timestamp string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(method))
	mac.Write([]byte(uri))
	mac.Write(body)
	mac.Write([]byte(timestamp))
	return mac.Sum(nil)
}

// SignHubSpotV1 returns the v1 X-HubSpot-Signature value: hex(SHA-256(secret + body)).
func SignHubSpotV1(secret string, body []byte) string {
	sum := hubspotV1Hash(secret, body)
	return hex.EncodeToString(sum)
}

func hubspotV1Hash(secret string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(secret))
	h.Write(body)
	return h.Sum(nil)
}

// hubspotV2Hash is hex(SHA-256(secret + method + uri + body)). HubSpot uses
// it for workflow actions and CRM cards, not for webhooks; it is kept for the
// documented test vectors.
func hubspotV2Hash(secret, method, uri string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(secret + method + uri))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// hubspotReceiver handles kind "hubspot".
type hubspotReceiver struct{}

func (hubspotReceiver) authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	if sig := r.Header.Get("X-HubSpot-Signature-v3"); sig != "" {
		return hubspotAuthenticateV3(r, sig, body, p.Secrets, now)
	}
	if p.Config["allow_v1"] == "true" {
		sig := r.Header.Get("X-HubSpot-Signature")
		version := r.Header.Get("X-HubSpot-Signature-Version")
		if sig == "" {
			return domain.SignatureMissing, fmt.Errorf("the X-HubSpot-Signature-v3 and X-HubSpot-Request-Timestamp headers (or a v1 X-HubSpot-Signature) are required")
		}
		if !strings.EqualFold(version, "v1") {
			return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature-Version %.20q is not accepted; send X-HubSpot-Signature-v3 (or v1)", version)
		}
		return hubspotAuthenticateV1(sig, body, p.Secrets)
	}
	if r.Header.Get("X-HubSpot-Signature") != "" {
		return domain.SignatureMissing, fmt.Errorf("the X-HubSpot-Signature-v3 header is required; v1/v2 signatures are not accepted by this provider (allow_v1 is off)")
	}
	return domain.SignatureMissing, fmt.Errorf("the X-HubSpot-Signature-v3 and X-HubSpot-Request-Timestamp headers are required")
}

func hubspotAuthenticateV3(r *http.Request, header string, body []byte, secrets []string, now time.Time) (string, error) {
	ts := r.Header.Get("X-HubSpot-Request-Timestamp")
	if ts == "" {
		return domain.SignatureMissing, fmt.Errorf("the X-HubSpot-Request-Timestamp header is required with X-HubSpot-Signature-v3")
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ts[0] < '0' || ts[0] > '9' {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Request-Timestamp must be epoch milliseconds")
	}
	if skew := now.Sub(time.UnixMilli(ms)); skew > replayWindow || skew < -replayWindow {
		return domain.SignatureExpired, fmt.Errorf("X-HubSpot-Request-Timestamp is %s from the server clock; more than 5 minutes is refused", shippoSkew(skew))
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header))
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature-v3 must be base64")
	}
	uri := hubspotURI(r)
	// Compute every candidate MAC, then compare each in constant time.
	valid := false
	for _, secret := range secrets {
		if secret != "" && hmac.Equal(got, hubspotV3MAC(secret, r.Method, uri, body, ts)) {
			valid = true
		}
	}
	if !valid {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature-v3 matches no active client secret of this provider (signed URI %.300q; check --public-url)", uri)
	}
	return domain.SignatureValid, nil
}

func hubspotAuthenticateV1(header string, body []byte, secrets []string) (string, error) {
	got, err := hex.DecodeString(strings.TrimSpace(header))
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature must be hex")
	}
	valid := false
	for _, secret := range secrets {
		if secret != "" && hmac.Equal(got, hubspotV1Hash(secret, body)) {
			valid = true
		}
	}
	if !valid {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature (v1) matches no active client secret of this provider")
	}
	return domain.SignatureValid, nil
}

// hubspotObjectTypes and hubspotActions are the subscription types handled.
var (
	hubspotObjectTypes = map[string]bool{"contact": true, "company": true, "deal": true}
	hubspotActions     = map[string]bool{"creation": true, "deletion": true, "propertyChange": true}
)

// parse splits a delivery into its events, in array order. A body that is
// not a JSON array of at most 100 elements is a format error (400); an
// element that cannot be used is a rejected event and the rest still apply.
func (hubspotReceiver) parse(_ *http.Request, body []byte, _ domain.ProviderEndpoint) ([]domain.Event, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, fmt.Errorf("body is not a JSON array of HubSpot events")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return nil, fmt.Errorf("body is not a JSON array of HubSpot events: %v", err)
	}
	if len(elems) > hubspotMaxEvents {
		return nil, fmt.Errorf("batch has %d events; HubSpot sends at most %d", len(elems), hubspotMaxEvents)
	}
	events := make([]domain.Event, len(elems))
	for i, raw := range elems {
		events[i] = hubspotEvent(raw)
	}
	return events, nil
}

// hubspotEvent turns one array element into an event.
func hubspotEvent(raw json.RawMessage) domain.Event {
	e := domain.Event{Payload: []byte(raw)}
	reject := func(reason string) domain.Event {
		e.RejectReason, e.Revision, e.Snapshot, e.Property = reason, nil, nil, ""
		if e.EventID == "" {
			sum := sha256.Sum256(raw)
			e.EventID = "sha256:" + hex.EncodeToString(sum[:])
		}
		return e
	}
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return reject("event is not a JSON object")
	}

	// The scope first, so a rejected event of a known type keeps it.
	typ, ok := hubspotString(f, "subscriptionType")
	if !ok {
		typ, ok = hubspotString(f, "eventType")
	}
	objectType, action, _ := strings.Cut(typ, ".")
	known := hubspotObjectTypes[objectType] && hubspotActions[action]
	if known {
		e.Scope = domain.ScopeName{ObjectType: objectType, Action: action}
	} else {
		name := typ
		if name == "" || len(name) > 100 || strings.ContainsFunc(name, func(c rune) bool { return !unicode.IsPrint(c) }) {
			name = "unsupported"
		}
		e.Scope = domain.ScopeName{Action: name}
	}

	// The identifiers, so a rejected event is still named by them when it can be.
	var ids [5]int64
	var missing []string
	for i, name := range []string{"portalId", "subscriptionId", "eventId", "objectId", "occurredAt"} {
		n, present, valid := hubspotInt(f, name)
		switch {
		case !present:
			missing = append(missing, name+" is missing")
		case !valid:
			missing = append(missing, name+" must be a non-negative integer")
		}
		ids[i] = n
	}
	if len(missing) == 0 {
		e.EventID = fmt.Sprintf("%d:%d:%d:%d:%d", ids[0], ids[1], ids[2], ids[3], ids[4])
		e.ObjectID = strconv.FormatInt(ids[3], 10)
		e.Timestamp = time.UnixMilli(ids[4]).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	switch {
	case !ok:
		return reject("subscriptionType is missing")
	case !known:
		return reject(fmt.Sprintf("unsupported HubSpot subscriptionType %.100q; Tidemark handles contact, company and deal creation, deletion and propertyChange", typ))
	case len(missing) > 0:
		return reject(strings.Join(missing, "; "))
	}
	rev := ids[4]
	e.Revision = &rev

	switch action {
	case "creation":
		e.Property, e.Snapshot = domain.PropertyCreated, json.RawMessage(`{}`)
	case "deletion":
		e.Property, e.Snapshot = domain.PropertyDeleted, json.RawMessage(`{}`)
	case "propertyChange":
		name, ok := hubspotString(f, "propertyName")
		if !ok || name == "" {
			return reject("propertyName is missing on a propertyChange event")
		}
		if len(name) > 255 || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "$") {
			return reject(fmt.Sprintf("propertyName %.100q must be at most 255 characters, without NUL, not starting with $", name))
		}
		value, reason := hubspotValue(f["propertyValue"])
		if reason != "" {
			return reject(reason)
		}
		snap, _ := json.Marshal(map[string]string{name: value})
		e.Property, e.Snapshot = name, snap
	}
	return e
}

// hubspotString reads a string field; ok is false when it is missing or not a string.
func hubspotString(f map[string]json.RawMessage, name string) (string, bool) {
	var s string
	raw, present := f[name]
	if !present || json.Unmarshal(raw, &s) != nil || string(bytes.TrimSpace(raw)) == "null" {
		return "", false
	}
	return s, true
}

// hubspotInt reads a non-negative integer field sent as a JSON number (or,
// leniently, as a string of digits).
func hubspotInt(f map[string]json.RawMessage, name string) (n int64, present, valid bool) {
	raw := bytes.TrimSpace(f[name])
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, false
	}
	s := string(raw)
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			return 0, true, false
		}
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, true, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true, false
	}
	return n, true, true
}

// hubspotValue reads propertyValue as a string. HubSpot sends strings; a
// number or boolean is kept as its JSON text and null as "" (a cleared value).
func hubspotValue(raw json.RawMessage) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", "propertyValue is missing on a propertyChange event"
	}
	var value string
	switch raw[0] {
	case '"':
		if json.Unmarshal(raw, &value) != nil {
			return "", "propertyValue is not a valid JSON string"
		}
	case 'n':
		value = ""
	case '{', '[':
		return "", "propertyValue must be a string, not an object or array"
	default:
		value = string(raw)
	}
	if strings.ContainsRune(value, 0) {
		return "", "propertyValue contains a NUL character (\\u0000), which cannot be stored"
	}
	return value, ""
}

func (hubspotReceiver) respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	writeJSON(w, http.StatusOK, deliveryResponse(deliveryID, results))
}
