package domain_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestRedactValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "…"},
		{"short", "…"},
		{"12345678", "…"},
		{"123456789", "1234…"},
		{"v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "v1,K…"},
		{"Bearer sk_live_0123456789", "Bear…"},
		{"éàüö-secret-value", "éàüö…"},
	} {
		if got := domain.RedactValue(tc.in); got != tc.want {
			t.Errorf("RedactValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCredentialName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Webhook-Signature": true,
		"X-Hubspot-Signature-V3": true, "Shippo-Auth-Signature": true, "X-Api-Key": true, "X-Access-Token": true,
		"token": true, "client_secret": true, "Password": true,
		// Names of credentials that carry none of the words above.
		"X-Auth-Key": true, "X-Auth": true, "X-Gateway-Key": true, "X-Session": true, "sig": true, "key": true,
		"access_key": true, "X-Credential": true, "X-Client-Credentials": true, "X-Session-Cookie": true, "Cookie2": true,
		"Webhook-Id": false, "Webhook-Timestamp": false, "Content-Type": false, "User-Agent": false,
		"X-Hubspot-Request-Timestamp": false, "X-Forwarded-For": false, "page": false,
	} {
		if got := domain.CredentialName(name); got != want {
			t.Errorf("CredentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCaptureRequest(t *testing.T) {
	t.Parallel()
	generic := domain.CredentialName
	kindHeader := func(name string) bool { return generic(name) || strings.EqualFold(name, "X-Kind-Sig") }
	for _, tc := range []struct {
		name          string
		query         string
		headers       map[string][]string
		wantQuery     string
		wantHeaders   map[string][]string
		wantTruncated bool
	}{{
		name:  "credentials redacted, the rest intact",
		query: "token=abcdefghijklmnop&page=2&tok%65n=0123456789abc&flag",
		headers: map[string][]string{
			"Authorization":     {"Bearer abcdefghijkl"},
			"Cookie":            {"session=0123456789"},
			"Webhook-Signature": {"v1,aGVsbG8gd29ybGQ= v1,b3RoZXI="},
			"X-Kind-Sig":        {"sha256=deadbeefdeadbeef"},
			"Webhook-Id":        {"msg_1"},
			"Content-Type":      {"application/json"},
			"X-Many":            {"a", "b"},
		},
		wantQuery: "token=abcd…&page=2&tok%65n=0123…&flag",
		wantHeaders: map[string][]string{
			"Authorization":     {"Bear…"},
			"Cookie":            {"sess…"},
			"Webhook-Signature": {"v1,a…"},
			"X-Kind-Sig":        {"sha2…"},
			"Webhook-Id":        {"msg_1"},
			"Content-Type":      {"application/json"},
			"X-Many":            {"a", "b"},
		},
	}, {
		name:          "a long value is cut",
		headers:       map[string][]string{"X-Long": {strings.Repeat("é", domain.MaxKeptHeaderValue)}},
		wantHeaders:   map[string][]string{"X-Long": {strings.Repeat("é", domain.MaxKeptHeaderValue/2)}},
		wantTruncated: true,
	}, {
		name:          "a long query is cut",
		query:         "q=" + strings.Repeat("x", domain.MaxKeptQuery),
		wantQuery:     "q=" + strings.Repeat("x", domain.MaxKeptQuery-2),
		wantHeaders:   map[string][]string{},
		wantTruncated: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := domain.CaptureRequest("POST", "/webhooks/acme/crm", tc.query, tc.headers, "192.0.2.1", kindHeader, generic)
			if r.Method != "POST" || r.Path != "/webhooks/acme/crm" || r.ClientAddress != "192.0.2.1" {
				t.Errorf("request line %+v", r)
			}
			if r.Query != tc.wantQuery {
				t.Errorf("query %q, want %q", r.Query, tc.wantQuery)
			}
			if !reflect.DeepEqual(r.Headers, tc.wantHeaders) {
				t.Errorf("headers %v, want %v", r.Headers, tc.wantHeaders)
			}
			if r.Truncated != tc.wantTruncated {
				t.Errorf("truncated %v, want %v", r.Truncated, tc.wantTruncated)
			}
		})
	}
}

// TestCaptureRequestBounds: a sender's many headers are kept within the
// count and byte bounds, by name in order, and said to be cut.
func TestCaptureRequestBounds(t *testing.T) {
	t.Parallel()
	many := map[string][]string{}
	for i := range 200 {
		many[fmt.Sprintf("X-H%03d", i)] = []string{strings.Repeat("v", 500)}
	}
	r := domain.CaptureRequest("POST", "/", "", many, "", domain.CredentialName, domain.CredentialName)
	if !r.Truncated {
		t.Error("not marked truncated")
	}
	size := 0
	for name, values := range r.Headers {
		size += len(name)
		for _, v := range values {
			size += len(v)
		}
	}
	if len(r.Headers) > domain.MaxKeptHeaders || size > domain.MaxKeptHeaderBytes {
		t.Errorf("kept %d headers of %d bytes, want at most %d and %d", len(r.Headers), size, domain.MaxKeptHeaders, domain.MaxKeptHeaderBytes)
	}
	if _, ok := r.Headers["X-H000"]; !ok {
		t.Error("the first header by name was not kept")
	}
}

func TestReplayable(t *testing.T) {
	t.Parallel()
	ok := domain.DeliveryDetail{DeliveryBrief: domain.DeliveryBrief{ID: "d1", Status: 200, Signature: domain.SignatureValid},
		Request: domain.Request{Method: "POST"}, Body: []byte(`{}`)}
	for _, tc := range []struct {
		name   string
		change func(*domain.DeliveryDetail)
		want   string // in the refusal; "" when it can be replayed
	}{
		{"authenticated, with its request", func(*domain.DeliveryDetail) {}, ""},
		{"refused before authentication", func(d *domain.DeliveryDetail) { d.Body, d.Signature, d.Status = nil, domain.SignatureInvalid, 401 }, "its body was not kept"},
		{"erased", func(d *domain.DeliveryDetail) { d.Body = []byte(domain.ErasedBody) }, "erased"},
		{"a replay", func(d *domain.DeliveryDetail) { d.ReplayOf = "d0" }, "itself a replay"},
		{"stored before requests were kept", func(d *domain.DeliveryDetail) { d.Request = domain.Request{} }, "before Tidemark kept"},
	} {
		d := ok
		tc.change(&d)
		err := d.Replayable()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), tc.want)):
			t.Errorf("%s: %v, want a conflict saying %q", tc.name, err, tc.want)
		}
	}
}
