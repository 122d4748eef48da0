package provider

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// FuzzStandardParse checks that parse never panics and only yields usable
// events, and that authenticate accepts a body only when it is exactly the
// body that was signed with one of the provider's secrets.
//
//	go test ./web -run '^$' -fuzz FuzzStandardParse -fuzztime 30s
func FuzzStandardParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/standard/*.json")
	if len(files) == 0 {
		f.Fatal("no fixtures in testdata/standard")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
		f.Add(b, bytes.Replace(b, []byte("12"), []byte("13"), 1))
		f.Add(b, append(bytes.Clone(b), ' '))
	}
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: "standard"},
		Secrets: []string{NewStandardSecret(), secret}}
	rcv := standard{}

	f.Fuzz(func(t *testing.T, signed, sent []byte) {
		now := time.Now()
		req := httptest.NewRequest(http.MethodPost, "/webhooks/acme/crm", bytes.NewReader(sent))
		req.Header.Set("webhook-id", "msg_fuzz")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))

		events, err := rcv.Parse(req, sent, p)
		if err == nil {
			if len(events) != 1 || !bytes.Equal(events[0].Payload, sent) {
				t.Fatalf("parse(%q) = %+v", sent, events)
			}
			if e := events[0]; e.RejectReason == "" {
				var obj map[string]json.RawMessage
				if e.ObjectID == "" || json.Unmarshal(e.Snapshot, &obj) != nil || obj == nil {
					t.Fatalf("accepted event without a record or an object snapshot: %+v", e)
				}
				if e.Revision != nil && *e.Revision < 0 {
					t.Fatalf("negative revision %d", *e.Revision)
				}
			}
		}

		sig, _ := SignStandard(secret, "msg_fuzz", now.Unix(), signed)
		req.Header.Set("webhook-signature", sig)
		verdict, err := rcv.Authenticate(req, sent, p, now)
		if same := bytes.Equal(signed, sent); (err == nil) != same || (verdict == domain.SignatureValid) != same {
			t.Fatalf("signed %q, sent %q: verdict %s, err %v", signed, sent, verdict, err)
		}
		other, _ := SignStandard(NewStandardSecret(), "msg_fuzz", now.Unix(), sent)
		req.Header.Set("webhook-signature", other)
		if verdict, err := rcv.Authenticate(req, sent, p, now); err == nil || verdict == domain.SignatureValid {
			t.Fatalf("a signature made with another secret was accepted: %s", verdict)
		}
	})
}
