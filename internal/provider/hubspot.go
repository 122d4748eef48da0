package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
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

func init() { Register(HubSpot) }

// HubSpot is the HubSpot kind, which the benchmarks sign batches for with
// SignHubSpotV3.
var HubSpot Kind = hubspot{}

// hubspot handles kind "hubspot".
type hubspot struct{}

func (hubspot) Name() string { return "hubspot" }

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

// hubspotSecretField is the client secret: HubSpot issues it, so the
// console requires it rather than generating one.
var hubspotSecretField = Field{Name: "hubspot_secret", Secret: true, Label: "Client secret", Flag: "--secret", Input: "password",
	Required: true, RequiredHint: "paste the client secret of your HubSpot app (Settings → Auth)",
	Hint:   "Required: the client secret of your HubSpot app (Settings → Auth). HubSpot issues it, so Tidemark does not generate one; it is stored encrypted and never shown again.",
	HintID: "hubspot-secret-hint"}

// Setup checks a new hubspot provider: the secret is the app's client secret
// (generated, in HubSpot's 36-character form, when empty) and
// config["allow_v1"] is "", "true" or "false" (default "false").
func (hubspot) Setup(secret string, config map[string]string) (string, map[string]string, error) {
	out := clone(config)
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
	if len(secret) < 8 || !printable(secret) || surroundingSpace(secret) {
		const rule = "%s must be the HubSpot app's client secret: at least 8 printable characters without surrounding spaces"
		f := hubspotSecretField
		err := fieldErrorf(f, rule+" (or leave it out to generate one, for example %s)", NewHubSpotSecret())
		// The console never generates a client secret: it says where to find one.
		err.FormMessage = fmt.Sprintf(rule+"; %s", f.Label, f.RequiredHint)
		return "", nil, err
	}
	return secret, out, nil
}

func (hubspot) NewSecret(map[string]string) (string, error) { return NewHubSpotSecret(), nil }

func (hubspot) HasSecrets() bool { return true }

// PullAPI: a private app's access token (domain/pull).
func (hubspot) PullAPI() pull.API { return pull.TokenAPI }

func (hubspot) Credentials() (headers, query []string) {
	return []string{"X-HubSpot-Signature-v3", "X-HubSpot-Signature"}, nil
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

func (hubspot) Authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
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
	if skew, out := outsideWindow(now, time.UnixMilli(ms)); out {
		return domain.SignatureExpired, fmt.Errorf("X-HubSpot-Request-Timestamp is %s from the server clock; more than 5 minutes is refused", skewText(skew))
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header))
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature-v3 must be base64")
	}
	uri := hubspotURI(r)
	expected := macs(secrets, func(secret string) []byte { return hubspotV3MAC(secret, r.Method, uri, body, ts) })
	if !matchAny([][]byte{got}, expected) {
		// The URL without its query: the reason is answered and logged,
		// and a query may carry a credential.
		signed, query, _ := strings.Cut(uri, "?")
		if query != "" {
			signed += "?…"
		}
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature-v3 matches no active client secret of this provider (signed URI %.300q; check --public-url)", signed)
	}
	return domain.SignatureValid, nil
}

func hubspotAuthenticateV1(header string, body []byte, secrets []string) (string, error) {
	got, err := hex.DecodeString(strings.TrimSpace(header))
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("X-HubSpot-Signature must be hex")
	}
	expected := macs(secrets, func(secret string) []byte { return hubspotV1Hash(secret, body) })
	if !matchAny([][]byte{got}, expected) {
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
func (hubspot) Parse(_ *http.Request, body []byte, _ domain.ProviderEndpoint) ([]domain.Event, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, fmt.Errorf("body is not a JSON array of HubSpot events")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return nil, fmt.Errorf("body is not a JSON array of HubSpot events: %w", err)
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
		e.RejectReason, e.Revision, e.RevisionTime, e.Snapshot, e.Property = reason, nil, time.Time{}, nil, ""
		if e.EventID == "" {
			e.EventID = fallbackEventID(raw)
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
		if name == "" || len(name) > 100 || !printable(name) {
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
	e.Revision, e.RevisionTime = &rev, time.UnixMilli(rev)

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

func (hubspot) Respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	RespondJSON(w, deliveryID, results)
}

// RespondQueued answers 200, as for a delivery applied at once: HubSpot
// counts any 2xx as delivered, and 200 is what its documentation shows.
func (hubspot) RespondQueued(w http.ResponseWriter, deliveryID, status string) int {
	return writeQueued(w, http.StatusOK, deliveryID, status)
}

func (hubspot) Form() Form {
	return Form{Legend: "For HubSpot", Title: "HubSpot", About: "A HubSpot app's webhook subscriptions, signed with the app's client secret, which you paste from HubSpot.", Fields: []Field{
		hubspotSecretField,
		{Name: "hubspot_allow_v1", Config: "allow_v1", Label: "also accept legacy v1 signatures", Flag: "--allow-v1", Input: "checkbox",
			Usage:  "hubspot: also accept legacy v1 signatures (no replay protection)",
			Hint:   "v1 signatures (X-HubSpot-Signature) carry no timestamp, so they have no replay protection: a captured delivery can be replayed. Leave this off unless your app still sends v1.",
			HintID: "hubspot-v1-hint"},
	}}
}

func (hubspot) Settings(config map[string]string) []Setting {
	return []Setting{{Label: "Accept legacy v1 signatures (allow_v1)", Value: strconv.FormatBool(config["allow_v1"] == "true")}}
}

const hubspotURLNote = "HubSpot signs this exact URL (X-HubSpot-Signature-v3 covers the method, URL, body and timestamp), so it must be the address HubSpot calls: when Tidemark runs behind a proxy or load balancer, start it with --public-url (or TIDEMARK_PUBLIC_URL) set to its public URL, or every delivery is refused with 401."

// SecretPage does not show the secret: the operator pasted it from HubSpot.
func (hubspot) SecretPage(endpoint, _ string, config map[string]string) SecretPage {
	v := SecretPage{EndpointURL: endpoint, SecretName: "client secret",
		SecretStored: "The client secret you pasted is stored encrypted; Tidemark does not show it. HubSpot keeps it under your app's Settings → Auth.",
		URLNote:      hubspotURLNote,
		Intro:        "HubSpot signs every delivery with your app's client secret (X-HubSpot-Signature-v3). Paste the URL below into your HubSpot app's webhook settings as the target URL.",
	}
	if config["allow_v1"] == "true" {
		v.Intro += " Legacy v1 signatures are accepted too; they carry no timestamp, so they have no replay protection."
	}
	return v
}

func (hubspot) ProviderPage(map[string]string) ProviderPage {
	return ProviderPage{URLNote: hubspotURLNote,
		TestHint: "Sends a one-event batch (contact.propertyChange of tidemark_test on contact 1) signed v3 with the newest client secret over the URL above."}
}

// TestDelivery is a one-event batch signed v3 over endpoint, which must be
// the public URL the webhook handler derives for the delivery.
func (hubspot) TestDelivery(endpoint, secret string, _ map[string]string, now time.Time) (Delivery, error) {
	body := hubspotSampleBody(mathrand.Int64N(1<<53-1)+1, now)
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	return Delivery{Body: body, Headers: map[string]string{
		"X-HubSpot-Signature-v3":      SignHubSpotV3(secret, http.MethodPost, endpoint, body, ts),
		"X-HubSpot-Request-Timestamp": ts,
	}}, nil
}

// hubspotSampleBody is a one-event batch in the shape of HubSpot's
// (testdata/hubspot/batch_contact.json): property tidemark_test of contact 1
// changed to the time at.
func hubspotSampleBody(eventID int64, at time.Time) []byte {
	body, _ := json.Marshal([]map[string]any{{
		"eventId": eventID, "subscriptionId": 1, "portalId": 1, "occurredAt": at.UnixMilli(),
		"subscriptionType": "contact.propertyChange", "attemptNumber": 0, "objectId": 1,
		"propertyName": "tidemark_test", "propertyValue": at.UTC().Format(time.RFC3339Nano), "changeSource": "TIDEMARK_CONSOLE",
	}})
	return body
}
