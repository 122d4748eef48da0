package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// Shippo (docs.goshippo.com/docs/tracking/webhooks). A provider authenticates
// its deliveries in one of two ways, chosen by config["auth"]:
//
//   - "hmac" (default): header Shippo-Auth-Signature: t=<unix time>,v1=<hex>
//     where v1 is HMAC-SHA256(secret, t + "." + raw body), and t must be
//     within ReplayWindow of the server clock.
//   - "token": a self-generated token Shippo sends back as the "token" query
//     parameter of every POST.
//
// The secrets (or tokens) are the provider's active secrets; any of them
// matches, so a rotation keeps both working. Every comparison is constant time.

// Shippo auth modes (config["auth"]).
const (
	shippoAuthHMAC  = "hmac"
	shippoAuthToken = "token"
)

// shippoSignatureHeaders are the header names the HMAC signature is read from,
// in order. Shippo-Auth-Signature is the corroborated name; Shippo's own AI
// notes say "Shippo-Signature", which is unconfirmed, so it is accepted as a
// fallback with exactly the same format and verification.
var shippoSignatureHeaders = []string{"Shippo-Auth-Signature", "Shippo-Signature"}

// shippoMinSecret is the shortest secret or token accepted from an operator.
const shippoMinSecret = 16

func init() { Register(shippo{}) }

// shippo handles kind "shippo".
type shippo struct{}

func (shippo) Name() string { return "shippo" }

// The connect form's fields, which setup refusals name.
var (
	shippoAuthField = Field{Name: "shippo_auth", Config: "auth", Label: "Auth mode", Flag: "--auth", Input: "select",
		Usage: "shippo: how deliveries authenticate, hmac (Shippo-Auth-Signature header) or token (?token= in the URL); default hmac",
		Options: []Option{
			{Value: shippoAuthHMAC, Label: "hmac: Shippo-Auth-Signature header"},
			{Value: shippoAuthToken, Label: "token: ?token= on the webhook URL"},
		}}
	shippoSecretField = Field{Name: "shippo_secret", Secret: true, Label: "Secret", Caption: "Secret or token (optional)", Flag: "--secret",
		Input: "text", MinLength: shippoMinSecret,
		Hint:   "At least 16 printable characters. Leave empty to have one generated; it is shown once after connecting.",
		HintID: "shippo-secret-hint"}
)

func (shippo) Setup(secret string, config map[string]string) (string, map[string]string, error) {
	out := clone(config)
	mode := out["auth"]
	if mode == "" {
		mode = shippoAuthHMAC
	}
	if mode != shippoAuthHMAC && mode != shippoAuthToken {
		return "", nil, fieldErrorf(shippoAuthField, `%s must be "hmac" or "token" for a shippo provider; got %q`, mode)
	}
	out["auth"] = mode
	if secret == "" {
		return newShippoSecret(mode), out, nil
	}
	if len(secret) < shippoMinSecret || !printable(secret) || surroundingSpace(secret) {
		return "", nil, fieldErrorf(shippoSecretField,
			"%s must be at least %d printable characters without surrounding spaces (or leave it out to generate one, for example %s)",
			shippoMinSecret, newShippoSecret(mode))
	}
	return secret, out, nil
}

func (shippo) NewSecret(config map[string]string) (string, error) {
	return newShippoSecret(shippoMode(config)), nil
}

func (shippo) HasSecrets() bool { return true }

// Credentials: the HMAC signature or the URL token, whichever the provider uses.
func (shippo) Credentials() (headers, query []string) {
	return shippoSignatureHeaders, []string{"token"}
}

// shippoMode is a provider's auth mode; anything but "token" is HMAC.
func shippoMode(config map[string]string) string {
	if config["auth"] == shippoAuthToken {
		return shippoAuthToken
	}
	return shippoAuthHMAC
}

// newShippoSecret returns a fresh HMAC secret (32 random bytes, hex) or URL
// token (24 random bytes, base64url).
func newShippoSecret(mode string) string {
	if mode == shippoAuthToken {
		return newURLToken()
	}
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SignShippo returns the Shippo-Auth-Signature header value for body signed
// at unix time t (seconds) with secret.
func SignShippo(secret string, t int64, body []byte) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(shippoMAC(secret, ts, body))
}

// shippoMAC is HMAC-SHA256(secret, t + "." + body), over t exactly as sent.
func shippoMAC(secret, t string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte("."))
	mac.Write(body)
	return mac.Sum(nil)
}

func (shippo) Authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	switch mode := p.Config["auth"]; mode {
	case "", shippoAuthHMAC:
		return shippoAuthenticateHMAC(r, body, p.Secrets, now)
	case shippoAuthToken:
		return shippoAuthenticateToken(r, p.Secrets)
	default:
		return domain.SignatureInvalid, fmt.Errorf("this shippo provider has an unknown auth mode %q; an operator must set it to hmac or token", mode)
	}
}

func shippoAuthenticateHMAC(r *http.Request, body []byte, secrets []string, now time.Time) (string, error) {
	var header string
	for _, name := range shippoSignatureHeaders {
		if header = r.Header.Get(name); header != "" {
			break
		}
	}
	if header == "" {
		return domain.SignatureMissing, fmt.Errorf("the Shippo-Auth-Signature header is required (t=<unix seconds>,v1=<hex HMAC-SHA256>)")
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return domain.SignatureInvalid, fmt.Errorf("Shippo-Auth-Signature must be t=<unix seconds>,v1=<hex HMAC-SHA256>")
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || n < 0 || ts[0] < '0' || ts[0] > '9' {
		return domain.SignatureInvalid, fmt.Errorf("Shippo-Auth-Signature t must be a unix timestamp in seconds")
	}
	// t is in seconds (docs/contract/webhooks.md#kind-shippo), which
	// Shippo's page does not state; so a value of 10^12 or more is read as
	// milliseconds: as seconds it would be tens of thousands of years away
	// and fail the window anyway. The MAC is computed over t exactly as sent
	// either way.
	sent := time.Unix(n, 0)
	if n >= 1e12 {
		sent = time.UnixMilli(n)
	}
	if skew, out := outsideWindow(now, sent); out {
		return domain.SignatureExpired, fmt.Errorf("Shippo-Auth-Signature t is %s from the server clock; more than 5 minutes is refused", skewText(skew))
	}
	expected := macs(secrets, func(secret string) []byte { return shippoMAC(secret, ts, body) })
	if !matchAny(sigs, expected) {
		return domain.SignatureInvalid, fmt.Errorf("no Shippo-Auth-Signature v1 matches an active secret of this provider")
	}
	return domain.SignatureValid, nil
}

func shippoAuthenticateToken(r *http.Request, secrets []string) (string, error) {
	token := r.URL.Query().Get("token")
	if token == "" {
		return domain.SignatureMissing, fmt.Errorf("the token query parameter is required (the webhook URL registered with Shippo must end in ?token=<provider secret>)")
	}
	if !tokenMatches(token, secrets) {
		return domain.SignatureInvalid, fmt.Errorf("the token query parameter does not match an active token of this provider")
	}
	return domain.SignatureValid, nil
}

// shippoBody is the envelope of every Shippo webhook.
type shippoBody struct {
	Event *string         `json:"event"`
	Test  json.RawMessage `json:"test"`
	Data  json.RawMessage `json:"data"`
}

// parse turns a Shippo delivery into its one event. A body that is not a JSON
// object with "event" and "data" is a format error (400); a known event with
// unusable data, or an event type Tidemark does not handle, is a rejected event.
func (shippo) Parse(_ *http.Request, body []byte, _ domain.ProviderEndpoint) ([]domain.Event, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	var env shippoBody
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if env.Event == nil {
		return nil, fmt.Errorf(`body has no "event"; expected for example {"event": "track_updated", "data": {...}}`)
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil, fmt.Errorf(`body has no "data"; expected for example {"event": "track_updated", "data": {...}}`)
	}
	e := domain.Event{Payload: body}
	switch name := *env.Event; name {
	case "track_updated":
		e.Scope = domain.ScopeName{ObjectType: "shipment", Action: name}
		e.RejectReason = shippoTrack(&e, env.Data)
	case "transaction_created", "transaction_updated":
		e.Scope = domain.ScopeName{ObjectType: "transaction", Action: name}
		e.RejectReason = shippoTransaction(&e, env.Data)
	default:
		// No object type, so no scope is created for it.
		action := name
		if action == "" || len(action) > 100 || !printable(action) {
			action = "unsupported"
		}
		e.Scope = domain.ScopeName{Action: action}
		e.RejectReason = fmt.Sprintf("unsupported Shippo event %.100q; Tidemark handles track_updated, transaction_created and transaction_updated", name)
	}
	if e.RejectReason != "" {
		e.Revision, e.RevisionTime = nil, time.Time{}
	}
	if e.EventID == "" {
		// Shippo sends no event id; an event whose ids could not be read is
		// named by its body.
		e.EventID = fallbackEventID(body)
	}
	if e.RejectReason == "" && (shippoIsTest(env.Test) || shippoIsTest(shippoField(env.Data, "test"))) {
		// Test webhooks (test: true, on the envelope or on a test-mode
		// transaction) are recorded but never applied: without a revision the
		// event's outcome is "unversioned" and no record is created or changed.
		// Their identifier is prefixed so a test event can never claim the
		// idempotency key of a live event with the same ids.
		e.Revision, e.RevisionTime = nil, time.Time{}
		e.EventID = "test:" + e.EventID
	}
	return []domain.Event{e}, nil
}

// shippoTrack fills e from a Track object: record "carrier:tracking_number",
// event "carrier:tracking_number:tracking_status.object_id", revision
// tracking_status.status_date.
func shippoTrack(e *domain.Event, data json.RawMessage) string {
	fields, reject := shippoObject(e, data)
	if reject != "" {
		return reject
	}
	carrier, reject := shippoString(fields, "carrier")
	if reject != "" {
		return reject
	}
	number, reject := shippoString(fields, "tracking_number")
	if reject != "" {
		return reject
	}
	var status map[string]json.RawMessage
	if json.Unmarshal(fields["tracking_status"], &status) != nil || status == nil {
		return "data.tracking_status must be a JSON object"
	}
	statusID, reject := shippoString(status, "object_id")
	if reject != "" {
		return "data.tracking_status." + reject[len("data."):]
	}
	date, reject := shippoString(status, "status_date")
	if reject != "" {
		return "data.tracking_status." + reject[len("data."):]
	}
	if len(carrier)+1+len(number) > 255 {
		return "data.carrier and data.tracking_number together must be at most 254 characters"
	}
	e.ObjectID = carrier + ":" + number
	e.EventID = e.ObjectID + ":" + statusID
	e.Timestamp = date
	e.Revision, e.RevisionTime, reject = shippoRevision("data.tracking_status.status_date", date)
	return reject
}

// shippoTransaction fills e from a Transaction object: record object_id,
// event "object_id:object_updated", revision object_updated.
func shippoTransaction(e *domain.Event, data json.RawMessage) string {
	fields, reject := shippoObject(e, data)
	if reject != "" {
		return reject
	}
	id, reject := shippoString(fields, "object_id")
	if reject != "" {
		return reject
	}
	updated, reject := shippoString(fields, "object_updated")
	if reject != "" {
		return reject
	}
	e.ObjectID = id
	e.EventID = id + ":" + updated
	e.Timestamp = updated
	e.Revision, e.RevisionTime, reject = shippoRevision("data.object_updated", updated)
	return reject
}

// shippoObject reads data as a JSON object and sets the event's snapshot to
// its compact form.
func shippoObject(e *domain.Event, data json.RawMessage) (map[string]json.RawMessage, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return nil, `"data" must be a JSON object`
	}
	snapshot, reject := compactSnapshot("data", data)
	if reject != "" {
		return nil, reject
	}
	e.Snapshot = snapshot
	return fields, ""
}

// shippoString reads a non-empty string field of at most 255 characters.
func shippoString(fields map[string]json.RawMessage, name string) (string, string) {
	var s string
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", fmt.Sprintf("data.%s is missing", name)
	}
	if json.Unmarshal(raw, &s) != nil || s == "" || len(s) > 255 || strings.ContainsRune(s, 0) {
		return "", fmt.Sprintf("data.%s must be a non-empty string of at most 255 characters", name)
	}
	return s, ""
}

// shippoField returns one field of a JSON object, or nil.
func shippoField(data json.RawMessage, name string) json.RawMessage {
	var fields map[string]json.RawMessage
	json.Unmarshal(data, &fields)
	return fields[name]
}

func shippoIsTest(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "true"
}

// shippoRevision turns an RFC 3339 timestamp into microseconds since the
// epoch, which keeps the order of timestamps down to the microsecond, and
// the instant it names.
func shippoRevision(field, s string) (*int64, time.Time, string) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, time.Time{}, fmt.Sprintf("%s must be an RFC 3339 timestamp, got %.40q", field, s)
	}
	if t.Before(time.Unix(0, 0)) {
		return nil, time.Time{}, fmt.Sprintf("%s must not be before 1970, got %.40q", field, s)
	}
	n := t.UnixMicro()
	return &n, t, ""
}

func (shippo) Respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	RespondJSON(w, deliveryID, results)
}

func (shippo) Form() Form {
	return Form{Legend: "For Shippo", Title: "Shippo", About: "Shippo's tracking and transaction webhooks, signed with a shared secret or carrying a token.",
		Fields: []Field{shippoAuthField, shippoSecretField}}
}

func (shippo) Settings(config map[string]string) []Setting {
	return []Setting{{Label: shippoAuthField.Label, Value: shippoMode(config)}}
}

func (shippo) SecretPage(endpoint, secret string, config map[string]string) SecretPage {
	body := shippoSampleBody("tidemark-test", "ts_example", sampleTime)
	if shippoMode(config) == shippoAuthToken {
		v := SecretPage{EndpointURL: endpoint + "?token=" + url.QueryEscape(secret), Secret: secret, SecretName: "token",
			Intro:    "Shippo authenticates its deliveries with this token, sent back as the token query parameter of the webhook URL. Paste the whole URL below, token included, into Shippo's webhook settings.",
			CurlHint: "Send a track_updated delivery from a shell (needs curl):"}
		v.CurlExample = strings.Join([]string{
			"url=" + ShellQuote(v.EndpointURL),
			"body=" + ShellQuote(string(body)),
			`curl -sS -X POST "$url" -H 'Content-Type: application/json' -d "$body"`,
		}, "\n")
		return v
	}
	return SecretPage{EndpointURL: endpoint, Secret: secret, SecretName: "HMAC secret",
		Intro:    "Shippo signs every delivery with this HMAC secret in the Shippo-Auth-Signature header (t=<unix seconds>,v1=<hex HMAC-SHA256 of t.body>). Paste the URL into Shippo's webhook settings and the secret as its signing secret.",
		CurlHint: "Send a signed track_updated delivery from a shell (needs openssl and curl):",
		CurlExample: strings.Join([]string{
			"secret=" + ShellQuote(secret),
			"url=" + ShellQuote(endpoint),
			"ts=$(date +%s)",
			"body=" + ShellQuote(string(body)),
			`sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$secret" -hex | sed 's/^.* //')`,
			`curl -sS -X POST "$url" -H "Shippo-Auth-Signature: t=$ts,v1=$sig" -H 'Content-Type: application/json' -d "$body"`,
		}, "\n"),
	}
}

func (shippo) ProviderPage(config map[string]string) ProviderPage {
	v := ProviderPage{TestHint: "Sends a track_updated event (shipment tidemark:tidemark-test) authenticated with the newest secret."}
	if shippoMode(config) == shippoAuthToken {
		v.EndpointSuffix = "?token=…"
		v.URLNote = "Shippo sends the token back as the token query parameter: the URL to paste ends in ?token= and the token, which was shown once when it was created. Tidemark cannot show it again; rotate to get a new one."
	}
	return v
}

// TestDelivery is a track_updated of the sample shipment with a new status
// dated now, signed or carrying the token as the provider's mode says.
func (shippo) TestDelivery(_, secret string, config map[string]string, now time.Time) (Delivery, error) {
	d := Delivery{Body: shippoSampleBody(sampleContact, "console-test-"+uuid.NewString(), now), Headers: map[string]string{}}
	if shippoMode(config) == shippoAuthToken {
		d.Query = "token=" + url.QueryEscape(secret)
	} else {
		d.Headers["Shippo-Auth-Signature"] = SignShippo(secret, now.Unix(), d.Body)
	}
	return d, nil
}

// shippoSampleBody is a track_updated delivery in the shape of Shippo's
// (testdata/shippo/track_updated_transit.json), for tracking number number
// with tracking status statusID dated at.
func shippoSampleBody(number, statusID string, at time.Time) []byte {
	date := at.UTC().Format(time.RFC3339Nano)
	status := map[string]any{
		"object_id": statusID, "object_created": date, "object_updated": date,
		"status": "TRANSIT", "status_details": "Test event from the Tidemark console.", "status_date": date,
		"substatus": nil, "location": map[string]any{"city": "San Francisco", "state": "CA", "zip": "94103", "country": "US"},
	}
	body, _ := json.Marshal(map[string]any{
		"event": "track_updated", "test": false,
		"data": map[string]any{
			"carrier": "tidemark", "tracking_number": number, "transaction": nil, "metadata": "Tidemark console test",
			"eta": nil, "original_eta": nil, "servicelevel": map[string]any{"token": "test", "name": "Test"},
			"tracking_status": status, "tracking_history": []any{status}, "messages": []any{},
		},
	})
	return body
}
