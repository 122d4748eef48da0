package web

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
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/domain"
)

// Standard Webhooks (standardwebhooks.com): HMAC-SHA256 over
// "{webhook-id}.{webhook-timestamp}.{body}" keyed with the base64-decoded
// part of a "whsec_" secret.

// replayWindow is how far a delivery's timestamp may be from the clock.
const replayWindow = 5 * time.Minute

// NewStandardSecret returns a fresh "whsec_" signing secret.
func NewStandardSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// ValidateStandardSecret checks that secret is "whsec_" followed by base64.
func ValidateStandardSecret(secret string) error {
	if _, err := standardKey(secret); err != nil {
		return domain.Errorf(domain.EINVALID, `secret must be "whsec_" followed by base64 (for example %s)`, NewStandardSecret())
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

// standardReceiver handles kind "standard".
type standardReceiver struct{}

func (standardReceiver) authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	id, ts, sigs := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return domain.SignatureMissing, fmt.Errorf("the webhook-id, webhook-timestamp and webhook-signature headers are required")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return domain.SignatureInvalid, fmt.Errorf("webhook-timestamp must be unix seconds")
	}
	if skew := now.Sub(time.Unix(sec, 0)); skew > replayWindow || skew < -replayWindow {
		return domain.SignatureExpired, fmt.Errorf("webhook-timestamp is %s from the server clock; more than 5 minutes is refused", skew.Round(time.Second).Abs())
	}
	// Compute every candidate MAC before comparing, and compare each in
	// constant time, so timing reveals nothing about the secrets.
	var macs [][]byte
	for _, secret := range p.Secrets {
		if key, err := standardKey(secret); err == nil {
			macs = append(macs, standardMAC(key, id, sec, body))
		}
	}
	valid := false
	for _, sig := range strings.Fields(sigs) {
		version, encoded, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			continue
		}
		for _, mac := range macs {
			if hmac.Equal(got, mac) {
				valid = true
			}
		}
	}
	if !valid {
		return domain.SignatureInvalid, fmt.Errorf("no webhook-signature matches an active secret of this provider")
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
func (standardReceiver) parse(r *http.Request, body []byte, _ domain.ProviderEndpoint) ([]domain.Event, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	id := r.Header.Get("webhook-id")
	if len(id) > 255 || strings.ContainsFunc(id, func(c rune) bool { return !unicode.IsPrint(c) }) {
		return nil, fmt.Errorf("webhook-id must be at most 255 printable characters")
	}
	var env standardBody
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %v", err)
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
	if bytes.Contains(snap, []byte(`\u0000`)) {
		return objectID, nil, nil, "data.snapshot contains a NUL character (\\u0000), which cannot be stored"
	}
	var compact bytes.Buffer
	json.Compact(&compact, snap)
	snapshot = compact.Bytes()

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

func (standardReceiver) respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	writeJSON(w, http.StatusOK, deliveryResponse(deliveryID, results))
}

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

func deliveryResponse(deliveryID string, results []domain.Result) any {
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
	return map[string]any{"delivery_id": deliveryID, "results": out}
}
