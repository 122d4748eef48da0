package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// hubspotFixtures are the unsigned deliveries under testdata/hubspot.
var hubspotFixtures = []string{"batch_contact.json", "deletion.json", "batch_malformed.json"}

func readHubSpotFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hubspot", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hubspotVectorBody is the body the synthetic v3 vector below was computed
// over.
const hubspotVectorBody = `[{"eventId":100,"subscriptionId":2001,"portalId":9000001,"appId":300001,"occurredAt":1714564800000,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":501,"propertyName":"email","propertyValue":"ada@example.com","changeSource":"CRM_UI"},{"eventId":101,"subscriptionId":2002,"portalId":9000001,"appId":300001,"occurredAt":1714564801000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":502,"changeSource":"IMPORT"}]`

// TestHubSpotSignatureVectors checks HubSpot's documented v1 test vector
// and the synthetic v3 vector (the v3 one was also reproduced with
// @hubspot/api-client's Signature.getSignature).
func TestHubSpotSignatureVectors(t *testing.T) {
	t.Parallel()
	const docSecret = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
	v1Body := `[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,"changeSource":"CRM","changeFlag":"NEW","appId":54321}]`
	if got, want := SignHubSpotV1(docSecret, []byte(v1Body)), "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"; got != want {
		t.Errorf("v1 = %s, want %s", got, want)
	}
	const secret = "hs-client-secret-synthetic-0001"
	if len(hubspotVectorBody) != 452 {
		t.Fatalf("vector body is %d bytes, want 452", len(hubspotVectorBody))
	}
	if got, want := SignHubSpotV3(secret, "POST", "https://hooks.example.com/webhooks/hubspot?tenant=acme", []byte(hubspotVectorBody), "1714564860000"), "OIAW0UVRlyfAHdAH6q5eX0jRih9kGmm+txtGgW7X0ME="; got != want {
		t.Errorf("v3 = %s, want %s", got, want)
	}
	if got, want := SignHubSpotV1(secret, []byte(hubspotVectorBody)), "5cfbf7d9437db69c46c36d7f24ee11257124cefe35dd2e311ac9736ce33b3d1a"; got != want {
		t.Errorf("v1 synthetic = %s, want %s", got, want)
	}

	// The same vector through authenticate, with the public base URL in the
	// request context and the server seeing a different host.
	req := httptest.NewRequest(http.MethodPost, "http://10.0.0.7:8080/webhooks/hubspot?tenant=acme", strings.NewReader(hubspotVectorBody))
	req = req.WithContext(context.WithValue(req.Context(), publicBaseKey{}, "https://hooks.example.com/"))
	req.Header.Set("X-HubSpot-Signature-V3", "OIAW0UVRlyfAHdAH6q5eX0jRih9kGmm+txtGgW7X0ME=")
	req.Header.Set("X-HubSpot-Request-Timestamp", "1714564860000")
	p := domain.ProviderEndpoint{Secrets: []string{"rotated-out-secret", secret}}
	if v, err := (hubspot{}).Authenticate(req, []byte(hubspotVectorBody), p, time.UnixMilli(1714564860000+60_000)); v != domain.SignatureValid {
		t.Errorf("authenticate = %s, %v; want valid", v, err)
	}
}

func TestHubSpotURIDecoding(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/webhooks/acme/hs?a=b%3Ac%2Fd%20e%2Bf&x=%40%21%24%27%28%29%2A%2C%3B%3F", nil)
	req.Host = "internal:8080"
	if got, want := hubspotURI(req), "http://internal:8080/webhooks/acme/hs?a=b:c/d%20e%2Bf&x=@!$'()*,;?"; got != want {
		t.Errorf("hubspotURI = %q, want %q", got, want)
	}
	req = req.WithContext(context.WithValue(req.Context(), publicBaseKey{}, "https://hooks.example.com"))
	if got, want := hubspotURI(req), "https://hooks.example.com/webhooks/acme/hs?a=b:c/d%20e%2Bf&x=@!$'()*,;?"; got != want {
		t.Errorf("hubspotURI = %q, want %q", got, want)
	}
}

func TestHubSpotParseBatch(t *testing.T) {
	t.Parallel()
	body := readHubSpotFixture(t, "batch_contact.json")
	events, err := hubspot{}.Parse(httptest.NewRequest(http.MethodPost, "/", nil), body, domain.ProviderEndpoint{})
	if err != nil {
		t.Fatal(err)
	}
	var elems []json.RawMessage
	json.Unmarshal(body, &elems)
	type want struct {
		id, objectType, action, objectID, property, snapshot, timestamp string
		revision                                                        int64
	}
	wants := []want{
		{"44120077:2101001:3817001:77001:1764410400000", "contact", "creation", "77001", domain.PropertyCreated, `{}`, "2025-11-29T10:00:00.000Z", 1764410400000},
		{"44120077:2101003:3817002:77001:1764410400250", "contact", "propertyChange", "77001", "jobtitle", `{"jobtitle":"Head of Data"}`, "2025-11-29T10:00:00.250Z", 1764410400250},
		{"44120077:2101004:3817003:77001:1764410400250", "contact", "propertyChange", "77001", "lifecyclestage", `{"lifecyclestage":"lead"}`, "2025-11-29T10:00:00.250Z", 1764410400250},
		{"44120077:2101003:3817010:77001:1764410523900", "contact", "propertyChange", "77001", "jobtitle", `{"jobtitle":"VP Data \u0026 Analytics"}`, "2025-11-29T10:02:03.900Z", 1764410523900},
		{"44120077:2101007:3817011:9120044:1764410530000", "company", "propertyChange", "9120044", "lifecyclestage", `{"lifecyclestage":"customer"}`, "2025-11-29T10:02:10.000Z", 1764410530000},
	}
	if len(events) != len(wants) {
		t.Fatalf("%d events, want %d", len(events), len(wants))
	}
	for i, w := range wants {
		e := events[i]
		if e.RejectReason != "" || e.EventID != w.id || e.Scope != (domain.ScopeName{ObjectType: w.objectType, Action: w.action}) ||
			e.ObjectID != w.objectID || e.Property != w.property || string(e.Snapshot) != w.snapshot ||
			e.Timestamp != w.timestamp || e.Revision == nil || *e.Revision != w.revision {
			t.Errorf("event %d = %+v (revision %v), want %+v", i, e, e.Revision, w)
		}
		if !bytes.Equal(e.Payload, elems[i]) {
			t.Errorf("event %d payload %s, want %s", i, e.Payload, elems[i])
		}
	}

	events, err = hubspot{}.Parse(nil, readHubSpotFixture(t, "deletion.json"), domain.ProviderEndpoint{})
	if err != nil || len(events) != 1 {
		t.Fatalf("deletion: %v %+v", err, events)
	}
	if e := events[0]; e.Property != domain.PropertyDeleted || string(e.Snapshot) != "{}" || e.Scope.Action != "deletion" || e.ObjectID != "77002" ||
		e.EventID != "44120077:2101002:3817100:77002:1764414000000" {
		t.Errorf("deletion event %+v", e)
	}

	// attemptNumber stays out of the event id.
	retry := bytes.Replace(readHubSpotFixture(t, "deletion.json"), []byte(`"attemptNumber":0`), []byte(`"attemptNumber":3`), 1)
	again, _ := hubspot{}.Parse(nil, retry, domain.ProviderEndpoint{})
	if len(again) != 1 || again[0].EventID != events[0].EventID {
		t.Errorf("retry event id %+v, want %s", again, events[0].EventID)
	}
}

func TestHubSpotParseRejects(t *testing.T) {
	t.Parallel()
	events, err := hubspot{}.Parse(nil, readHubSpotFixture(t, "batch_malformed.json"), domain.ProviderEndpoint{})
	if err != nil || len(events) != 3 {
		t.Fatalf("%v %+v", err, events)
	}
	if events[0].RejectReason != "" || events[2].RejectReason != "" {
		t.Errorf("good events rejected: %q %q", events[0].RejectReason, events[2].RejectReason)
	}
	if e := events[1]; !strings.Contains(e.RejectReason, "objectId is missing") || e.Revision != nil || e.EventID == "" || e.Scope.ObjectType != "deal" {
		t.Errorf("malformed event %+v", e)
	}

	base := `{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":1764410400000,"objectId":4`
	for _, c := range []struct{ elem, reason string }{
		{base + `}`, "subscriptionType is missing"},
		{base + `,"subscriptionType":"contact.merge"}`, "unsupported"},
		{base + `,"subscriptionType":"ticket.creation"}`, "unsupported"},
		{base + `,"subscriptionType":"contact.propertyChange","propertyValue":"x"}`, "propertyName is missing"},
		{base + `,"subscriptionType":"contact.propertyChange","propertyName":"x"}`, "propertyValue is missing"},
		{base + `,"subscriptionType":"contact.propertyChange","propertyName":"x","propertyValue":"a\u0000b"}`, "NUL"},
		{`{"eventId":1,"subscriptionId":2,"portalId":3,"objectId":4,"subscriptionType":"contact.creation"}`, "occurredAt is missing"},
		{`{"eventId":1,"subscriptionId":2,"portalId":3,"occurredAt":-5,"objectId":4,"subscriptionType":"contact.creation"}`, "occurredAt must be"},
		{`"not an object"`, "not a JSON object"},
	} {
		events, err := hubspot{}.Parse(nil, []byte(`[`+c.elem+`]`), domain.ProviderEndpoint{})
		if err != nil || len(events) != 1 {
			t.Fatalf("%s: %v %+v", c.elem, err, events)
		}
		if e := events[0]; !strings.Contains(e.RejectReason, c.reason) || e.EventID == "" || e.Revision != nil {
			t.Errorf("%s: event %+v, want reject %q", c.elem, e, c.reason)
		}
		if strings.Contains(c.elem, "unsupported") && events[0].Scope.ObjectType != "" {
			t.Errorf("unknown type kept an object type: %+v", events[0].Scope)
		}
	}
	if events, _ := (hubspot{}).Parse(nil, []byte(`[`+base+`,"subscriptionType":"contact.merge"}]`), domain.ProviderEndpoint{}); events[0].Scope.ObjectType != "" || events[0].Scope.Action != "contact.merge" {
		t.Errorf("unknown type scope %+v", events[0].Scope)
	}

	for _, body := range []string{`{}`, `null`, ``, `"x"`, `[1,`, "[\xff]"} {
		if _, err := (hubspot{}).Parse(nil, []byte(body), domain.ProviderEndpoint{}); err == nil {
			t.Errorf("parse(%q) succeeded, want an error", body)
		}
	}
	big := "[" + strings.TrimSuffix(strings.Repeat(`{},`, hubspotMaxEvents+1), ",") + "]"
	if _, err := (hubspot{}).Parse(nil, []byte(big), domain.ProviderEndpoint{}); err == nil {
		t.Error("a batch of 101 events was accepted")
	}
	full := "[" + strings.TrimSuffix(strings.Repeat(`{},`, hubspotMaxEvents), ",") + "]"
	if events, err := (hubspot{}).Parse(nil, []byte(full), domain.ProviderEndpoint{}); err != nil || len(events) != hubspotMaxEvents {
		t.Errorf("a batch of 100 events: %v", err)
	}
}

func TestHubSpotSetup(t *testing.T) {
	t.Parallel()
	secret, config, err := (hubspot{}).Setup("", nil)
	if err != nil || len(secret) != 36 || config["allow_v1"] != "false" {
		t.Errorf("(hubspot{}).Setup(\"\") = %q %v %v", secret, config, err)
	}
	if _, config, err := (hubspot{}).Setup("my-client-secret", map[string]string{"allow_v1": "true"}); err != nil || config["allow_v1"] != "true" {
		t.Errorf("allow_v1=true: %v %v", config, err)
	}
	if _, _, err := (hubspot{}).Setup("my-client-secret", map[string]string{"allow_v1": "yes"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("allow_v1=yes: %v", err)
	}
	if _, _, err := (hubspot{}).Setup(" short", nil); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("bad secret: %v", err)
	}
}

// FuzzHubSpotParse checks that parse never panics and keeps its invariants,
// and that authenticate accepts a body only when it is exactly the body that
// was signed with the provider's secret.
func FuzzHubSpotParse(f *testing.F) {
	for _, name := range hubspotFixtures {
		b := readHubSpotFixture(f, name)
		f.Add(b, b)
		f.Add(b, bytes.Replace(b, []byte("77001"), []byte("77009"), 1))
		f.Add(b, append(bytes.Clone(b), ' '))
	}
	f.Add([]byte(hubspotVectorBody), []byte(hubspotVectorBody))
	const secret = "hubspot-fuzz-secret-0123456789"
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "hubspot", Config: map[string]string{"allow_v1": "true"}},
		Secrets: []string{"rotated-hubspot-secret-98765", secret}}
	rcv := hubspot{}

	f.Fuzz(func(t *testing.T, signed, sent []byte) {
		now := time.Now()
		req := httptest.NewRequest(http.MethodPost, "http://hooks.example.com/webhooks/acme/hs?x=1", bytes.NewReader(sent))

		events, err := rcv.Parse(req, sent, p)
		if err == nil {
			if len(events) > hubspotMaxEvents {
				t.Fatalf("%d events", len(events))
			}
			for _, e := range events {
				if e.EventID == "" || len(e.Payload) == 0 || !json.Valid(e.Payload) {
					t.Fatalf("event without id or payload: %+v", e)
				}
				if e.RejectReason != "" {
					if e.Revision != nil || e.Snapshot != nil {
						t.Fatalf("rejected event keeps revision or snapshot: %+v", e)
					}
					continue
				}
				if e.ObjectID == "" || !hubspotObjectTypes[e.Scope.ObjectType] || !hubspotActions[e.Scope.Action] || e.Property == "" || e.Revision == nil || *e.Revision < 0 {
					t.Fatalf("accepted event is incomplete: %+v", e)
				}
				var obj map[string]string
				if json.Unmarshal(e.Snapshot, &obj) != nil || obj == nil || bytes.Contains(e.Snapshot, []byte(`\u0000`)) {
					t.Fatalf("snapshot %q is not a storable JSON object of strings", e.Snapshot)
				}
				if _, ok := obj[e.Property]; !ok && e.Scope.Action == "propertyChange" {
					t.Fatalf("snapshot %s lacks property %q", e.Snapshot, e.Property)
				}
			}
		}

		// authenticate: v3 and v1 over signed accept sent only if they are equal.
		ts := strconv.FormatInt(now.UnixMilli(), 10)
		req.Header.Set("X-HubSpot-Signature-v3", SignHubSpotV3(secret, http.MethodPost, "http://hooks.example.com/webhooks/acme/hs?x=1", signed, ts))
		req.Header.Set("X-HubSpot-Request-Timestamp", ts)
		v, _ := rcv.Authenticate(req, sent, p, now)
		if (v == domain.SignatureValid) != bytes.Equal(signed, sent) {
			t.Fatalf("v3 verdict %s for signed %q, sent %q", v, signed, sent)
		}
		v1 := httptest.NewRequest(http.MethodPost, "/webhooks/acme/hs", nil)
		v1.Header.Set("X-HubSpot-Signature", SignHubSpotV1(secret, signed))
		v1.Header.Set("X-HubSpot-Signature-Version", "v1")
		v, _ = rcv.Authenticate(v1, sent, p, now)
		if (v == domain.SignatureValid) != bytes.Equal(signed, sent) {
			t.Fatalf("v1 verdict %s for signed %q, sent %q", v, signed, sent)
		}
	})
}
