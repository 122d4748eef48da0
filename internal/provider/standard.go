package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
)

// Standard Webhooks (standardwebhooks.com): HMAC-SHA256 over
// "{webhook-id}.{webhook-timestamp}.{body}" keyed with the base64-decoded
// part of a "whsec_" secret. Senders running on Svix name the same
// headers svix-id, svix-timestamp and svix-signature.

func init() { Register(Standard) }

// Standard is the Standard Webhooks kind, which the command line's demo,
// send and benchmarks use directly with SignStandard.
var Standard Kind = standard{}

// standard handles kind "standard".
type standard struct{}

func (standard) Name() string { return "standard" }

func (standard) Setup(secret string, config map[string]string) (string, map[string]string, error) {
	if secret == "" {
		return NewStandardSecret(), config, nil
	}
	return secret, config, ValidateStandardSecret(secret)
}

func (standard) NewSecret(map[string]string) (string, error) { return NewStandardSecret(), nil }

func (standard) HasSecrets() bool { return true }

func (standard) Credentials() (headers, query []string) {
	return []string{"webhook-signature", "svix-signature"}, nil
}

// standardNames is one set of the headers a standard delivery is signed
// with: the Standard Webhooks names, or those of senders running on Svix.
type standardNames struct{ id, timestamp, signature string }

var (
	webhookNames = standardNames{"webhook-id", "webhook-timestamp", "webhook-signature"}
	svixNames    = standardNames{"svix-id", "svix-timestamp", "svix-signature"}
)

// standardHeaders picks the set a delivery uses: the webhook-* names when
// any of them is sent (as Svix's own libraries accept either), else the
// svix-* names. One set is read whole, never a mix.
func standardHeaders(h http.Header) standardNames {
	for _, name := range []string{webhookNames.id, webhookNames.timestamp, webhookNames.signature} {
		if h.Get(name) != "" {
			return webhookNames
		}
	}
	for _, name := range []string{svixNames.id, svixNames.timestamp, svixNames.signature} {
		if h.Get(name) != "" {
			return svixNames
		}
	}
	return webhookNames
}

// NewStandardSecret returns a fresh "whsec_" signing secret.
func NewStandardSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// ValidateStandardSecret checks that secret is "whsec_" followed by base64;
// the refusal is a *FieldError about the secret.
func ValidateStandardSecret(secret string) error {
	if _, err := standardKey(secret); err != nil {
		msg := fmt.Sprintf(`secret must be "whsec_" followed by base64 (for example %s)`, NewStandardSecret())
		return &FieldError{Field: "secret", Flag: "--secret", Label: "Secret", Message: msg, FormMessage: msg}
	}
	return nil
}

func standardKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err == nil && len(key) == 0 {
		err = fmt.Errorf("empty key")
	}
	return key, err
}

// SignStandard returns the webhook-signature header value for a delivery.
func SignStandard(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := standardKey(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(key, id, timestamp, body)), nil
}

func standardMAC(key []byte, id string, timestamp int64, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return mac.Sum(nil)
}

func (standard) Authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	n := standardHeaders(r.Header)
	id, ts, sigs := r.Header.Get(n.id), r.Header.Get(n.timestamp), r.Header.Get(n.signature)
	if id == "" || ts == "" || sigs == "" {
		if n == svixNames {
			return domain.SignatureMissing, fmt.Errorf("the svix-id, svix-timestamp and svix-signature headers are required together")
		}
		return domain.SignatureMissing, fmt.Errorf("the webhook-id, webhook-timestamp and webhook-signature headers are required")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("%s must be unix seconds", n.timestamp)
	}
	if skew, out := outsideWindow(now, time.Unix(sec, 0)); out {
		return domain.SignatureExpired, fmt.Errorf("%s is %s from the server clock; more than 5 minutes is refused", n.timestamp, skew.Round(time.Second).Abs())
	}
	expected := macs(p.Secrets, func(secret string) []byte {
		key, err := standardKey(secret)
		if err != nil {
			return nil
		}
		return standardMAC(key, id, sec, body)
	})
	var sent [][]byte
	for _, sig := range strings.Fields(sigs) {
		version, encoded, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(encoded); err == nil {
			sent = append(sent, got)
		}
	}
	if !matchAny(sent, expected) {
		return domain.SignatureInvalid, fmt.Errorf("no %s matches an active secret of this provider", n.signature)
	}
	return domain.SignatureValid, nil
}

// standardBody is the JSON envelope of a standard delivery.
type standardBody struct {
	Type      *string         `json:"type"`
	Timestamp json.RawMessage `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// parse turns a standard delivery into its one event. A body that is not a
// JSON object with a "type" of the form "object.action" is a format error
// (400); a well-formed envelope with unusable data is a rejected event.
func (standard) Parse(r *http.Request, body []byte, _ domain.ProviderEndpoint) ([]domain.Event, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	n := standardHeaders(r.Header)
	id := r.Header.Get(n.id)
	if len(id) > 255 || !printable(id) {
		return nil, fmt.Errorf("%s must be at most 255 printable characters", n.id)
	}
	var env standardBody
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	if env.Type == nil {
		return nil, fmt.Errorf(`body has no "type"; expected for example {"type": "contact.snapshot", "data": {...}}`)
	}
	objectType, action, ok := strings.Cut(*env.Type, ".")
	if !ok || objectType == "" || action == "" || len(*env.Type) > 200 {
		return nil, fmt.Errorf(`"type" must be "<object type>.<action>", for example "contact.snapshot"; got %q`, *env.Type)
	}
	e := domain.Event{
		EventID: id,
		Scope:   domain.ScopeName{ObjectType: objectType, Action: action},
		Payload: body,
	}
	json.Unmarshal(env.Timestamp, &e.Timestamp)
	if *env.Type == domain.LeadSignupType {
		parseLeadData(&e, env.Data)
		return []domain.Event{e}, nil
	}
	e.ObjectID, e.Revision, e.Snapshot, e.RejectReason = parseSnapshotData(objectType, env.Data)
	return []domain.Event{e}, nil
}

// parseLeadData reads a lead.signup's data: email and campaign required;
// name, company, domain and source optional, all strings. The normalised
// lead is the event's snapshot, so a redelivery is told from a reused id.
func parseLeadData(e *domain.Event, data json.RawMessage) {
	var l domain.Lead
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil || len(bytes.TrimSpace(data)) == 0 || data[0] != '{' {
		e.RejectReason = `"data" must be an object of strings: email, name, company, domain, campaign, source`
		return
	}
	l, err := domain.NormalizeLead(l)
	if err != nil {
		e.ObjectID, e.RejectReason = l.Email, domain.ErrorMessage(err)
		return
	}
	e.Lead, e.ObjectID = &l, l.Email
	e.Snapshot, _ = json.Marshal(l)
}

// parseSnapshotData reads {"contact_id"|"object_id", "revision", "snapshot"}.
func parseSnapshotData(objectType string, data json.RawMessage) (objectID string, revision *int64, snapshot json.RawMessage, reject string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		return "", nil, nil, `"data" must be a JSON object`
	}
	idField := "object_id"
	if objectType == domain.ContactType {
		idField = "contact_id"
	}
	raw, ok := fields[idField]
	if !ok || string(raw) == "null" {
		return "", nil, nil, fmt.Sprintf("data.%s is missing", idField)
	}
	if json.Unmarshal(raw, &objectID) != nil || objectID == "" || len(objectID) > 255 || strings.ContainsRune(objectID, 0) {
		return "", nil, nil, fmt.Sprintf("data.%s must be a non-empty string of at most 255 characters", idField)
	}
	snap := bytes.TrimSpace(fields["snapshot"])
	if len(snap) == 0 || snap[0] != '{' {
		return objectID, nil, nil, "data.snapshot must be a JSON object"
	}
	snapshot, reject = compactSnapshot("data.snapshot", snap)
	if reject != "" {
		return objectID, nil, nil, reject
	}

	rev := bytes.TrimSpace(fields["revision"])
	if len(rev) == 0 || string(rev) == "null" {
		return objectID, nil, snapshot, ""
	}
	n, err := strconv.ParseInt(string(rev), 10, 64)
	if err != nil || n < 0 {
		return objectID, nil, snapshot, fmt.Sprintf("data.revision must be a non-negative integer, got %.40s", rev)
	}
	return objectID, &n, snapshot, ""
}

func (standard) Respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	RespondJSON(w, deliveryID, results)
}

func (standard) Form() Form {
	return Form{Title: "Standard Webhooks", About: "Any system that signs its webhooks as Standard Webhooks do " +
		"(webhook-id, webhook-timestamp, webhook-signature). Tidemark generates the signing secret."}
}

func (standard) Settings(map[string]string) []Setting { return nil }

func (k standard) SecretPage(endpoint, secret string, _ map[string]string) SecretPage {
	return SecretPage{
		EndpointURL: endpoint, Secret: secret, SecretName: "signing secret",
		Intro:       "Give the provider this endpoint URL and signing secret (" + k.Name() + ", Standard Webhooks signatures).",
		CurlHint:    "Send a signed contact.snapshot delivery from a shell (needs openssl, curl and od):",
		CurlExample: standardCurlExample(endpoint, secret),
		SendExample: "tidemark send --url " + ShellWord(endpoint) + " --secret " + ShellWord(secret),
	}
}

// standardCurlExample is a shell snippet that signs one delivery per
// Standard Webhooks with openssl and posts it with curl.
func standardCurlExample(endpoint, secret string) string {
	body := `{"type":"contact.snapshot","data":{"contact_id":"c-1001","revision":1,"snapshot":{"job_title":"Director"}}}`
	return strings.Join([]string{
		"secret=" + ShellQuote(strings.TrimPrefix(secret, "whsec_")),
		"url=" + ShellQuote(endpoint),
		"id=msg_$(date +%s); ts=$(date +%s)",
		"body=" + ShellQuote(body),
		`sig=$(printf '%s.%s.%s' "$id" "$ts" "$body" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '%s' "$secret" | base64 -d | od -An -tx1 | tr -d ' \n') -binary | base64)`,
		`curl -sS -X POST "$url" -H "webhook-id: $id" -H "webhook-timestamp: $ts" -H "webhook-signature: v1,$sig" -H 'Content-Type: application/json' -d "$body"`,
	}, "\n")
}

func (standard) ProviderPage(map[string]string) ProviderPage {
	return ProviderPage{TestHint: "Signs a contact.snapshot event (contact tidemark-test) with the newest secret."}
}

// TestDelivery is a contact.snapshot of the sample contact whose revision is
// now in milliseconds, so each test event applies.
func (standard) TestDelivery(_, secret string, _ map[string]string, now time.Time) (Delivery, error) {
	body, _ := json.Marshal(map[string]any{
		"type": "contact.snapshot", "timestamp": now.UTC().Format(time.RFC3339),
		"data": map[string]any{"contact_id": sampleContact, "revision": now.UnixMilli(),
			"snapshot": map[string]any{"note": "test event from the Tidemark console", "sent_at": now.UTC().Format(time.RFC3339)}},
	})
	id := "console-test-" + uuid.NewString()
	sig, err := SignStandard(secret, id, now.Unix(), body)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{Body: body, Headers: map[string]string{
		"webhook-id": id, "webhook-timestamp": strconv.FormatInt(now.Unix(), 10), "webhook-signature": sig}}, nil
}
