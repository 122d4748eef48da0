package provider

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// FuzzSalesforceParse feeds arbitrary bodies to the salesforce receiver:
// authenticate and parse never panic, and every event they produce is
// usable by Ingest (a JSON object snapshot, or a reject reason); the body
// as stored, its credentials blanked, parses into the same events.
func FuzzSalesforceParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "salesforce", "*.xml"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`<SessionId xsi:nil="true"/>`), []byte(`<SessionId>00D5e!AQ4AQFake</SessionId>`), 1))
	}
	f.Add([]byte(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body/></soapenv:Envelope>`))
	const token = "fuzz-token-0123456789abcdef"
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "salesforce",
		Config: map[string]string{"org_id": "00D5e000000AbCdEAK", "revision_field": "SystemModstamp"}}, Secrets: []string{token}}
	rcv := salesforce{}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/webhooks/acme/sf?token="+token, bytes.NewReader(body))
		verdict, err := rcv.Authenticate(r, body, p, time.Now())
		if err != nil {
			return
		}
		if verdict != domain.SignatureValid && verdict != domain.SignatureUnchecked {
			t.Fatalf("verdict %q without an error", verdict)
		}
		events, err := rcv.Parse(r, body, p)
		if verdict == domain.SignatureUnchecked && err == nil {
			t.Fatalf("unchecked body parsed into %d events", len(events))
		}
		if err != nil {
			return
		}
		if len(events) == 0 || len(events) > 100 {
			t.Fatalf("%d events", len(events))
		}
		// The body as stored, SessionId blanked, parses alike.
		stored := rcv.RedactBody(body)
		if again, err := rcv.Parse(r, stored, p); err != nil || !reflect.DeepEqual(again, events) {
			t.Fatalf("the blanked body parses into %+v (%v), want %+v", again, err, events)
		}
		for _, e := range events {
			if e.RejectReason != "" {
				continue
			}
			var snap map[string]any
			if e.ObjectID == "" || e.Scope.ObjectType == "" || json.Unmarshal(e.Snapshot, &snap) != nil || snap == nil {
				t.Fatalf("accepted event is unusable: %+v", e)
			}
			if e.Revision != nil && *e.Revision < 0 {
				t.Fatalf("negative revision %d", *e.Revision)
			}
		}
	})
}
