package provider

import (
	"bytes"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// shippoFixture reads testdata/shippo/name.json without its final newline.
func shippoFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/shippo/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

func TestShippoSignatureVector(t *testing.T) {
	t.Parallel()
	// A synthetic vector: Shippo publishes none.
	body := shippoFixture(t, "track_updated_test")
	got := SignShippo("shippo-hmac-secret-synthetic", 1714564860, body)
	want := "t=1714564860,v1=5b4302a55c73c5c1b387b919ebb2fbb58ab5381d9dea0c70cc8c06adc0107110"
	if got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
}

func TestShippoSetup(t *testing.T) {
	t.Parallel()
	secret, config, err := Setup("shippo", "", nil)
	if err != nil || config["auth"] != "hmac" || len(secret) != 64 {
		t.Fatalf("default: %q %v %v", secret, config, err)
	}
	if _, err := hex.DecodeString(secret); err != nil {
		t.Fatalf("hmac secret %q is not hex", secret)
	}
	secret, config, err = Setup("shippo", "", map[string]string{"auth": "token"})
	if err != nil || config["auth"] != "token" || len(secret) != 32 || strings.ContainsAny(secret, "+/=") {
		t.Fatalf("token: %q %v %v", secret, config, err)
	}
	if s, _, err := Setup("shippo", "my-own-shippo-secret", map[string]string{"auth": "hmac"}); err != nil || s != "my-own-shippo-secret" {
		t.Fatalf("given secret: %q %v", s, err)
	}
	if _, _, err := Setup("shippo", "short", nil); domain.ErrorCode(err) != domain.EINVALID ||
		!strings.HasPrefix(err.Error(), "--secret must be at least 16 printable characters without surrounding spaces (or leave it out") {
		t.Fatalf("short secret: %v", err)
	}
	if _, _, err := Setup("shippo", "", map[string]string{"auth": "basic"}); domain.ErrorCode(err) != domain.EINVALID ||
		err.Error() != `--auth must be "hmac" or "token" for a shippo provider; got "basic"` {
		t.Fatalf("bad auth: %v", err)
	}
}

func TestShippoAuthenticateErrors(t *testing.T) {
	t.Parallel()
	const secret = "shippo-hmac-secret-synthetic"
	body := shippoFixture(t, "track_updated_transit")
	now := testNow.Unix()
	sig := func(secret string, at int64) map[string]string {
		return map[string]string{"Shippo-Auth-Signature": SignShippo(secret, at, body)}
	}
	token := map[string]string{"auth": "token"}
	runAuthCases(t, shippo{}, []authCase{
		{name: "valid hmac", secrets: []string{secret}, headers: sig(secret, now), body: body, wantVerdict: domain.SignatureValid},
		{name: "valid token", config: token, secrets: []string{secret}, target: "/webhooks/acme/p?token=" + secret, body: body, wantVerdict: domain.SignatureValid},
		{name: "no signature", secrets: []string{secret}, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "the Shippo-Auth-Signature header is required"},
		{name: "no v1", secrets: []string{secret}, headers: map[string]string{"Shippo-Auth-Signature": "t=" + strconv.FormatInt(now, 10)}, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "Shippo-Auth-Signature must be t=<unix seconds>,v1=<hex HMAC-SHA256>"},
		{name: "v1 not hex", secrets: []string{secret}, headers: map[string]string{"Shippo-Auth-Signature": "t=1,v1=zz"}, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "Shippo-Auth-Signature must be t=<unix seconds>"},
		{name: "t not a number", secrets: []string{secret}, headers: map[string]string{"Shippo-Auth-Signature": "t=+5,v1=00"}, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "Shippo-Auth-Signature t must be a unix timestamp in seconds"},
		{name: "too old", secrets: []string{secret}, headers: sig(secret, now-6*60), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "Shippo-Auth-Signature t is 6m0s from the server clock"},
		{name: "too old in milliseconds", secrets: []string{secret}, headers: sig(secret, (now-6*60)*1000), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "more than 5 minutes is refused"},
		{name: "other secret", secrets: []string{"another-shippo-secret-0000"}, headers: sig(secret, now), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no Shippo-Auth-Signature v1 matches an active secret of this provider"},
		{name: "tampered body", secrets: []string{secret}, headers: map[string]string{"Shippo-Auth-Signature": SignShippo(secret, now, []byte("{}"))},
			body: body, wantVerdict: domain.SignatureInvalid, wantErr: "no Shippo-Auth-Signature v1 matches"},
		{name: "unknown auth mode", config: map[string]string{"auth": "basic"}, secrets: []string{secret}, headers: sig(secret, now), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: `this shippo provider has an unknown auth mode "basic"`},
		{name: "no token", config: token, secrets: []string{secret}, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "the token query parameter is required"},
		{name: "other token", config: token, secrets: []string{secret}, target: "/webhooks/acme/p?token=guess", body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "the token query parameter does not match an active token of this provider"},
	})
}

func TestShippoParseErrors(t *testing.T) {
	t.Parallel()
	runParseCases(t, shippo{}, []parseCase{
		{name: "not UTF-8", body: []byte("{\"event\":\"\xff\"}"), wantErr: "body is not valid UTF-8"},
		{name: "not JSON", body: []byte(`event=track_updated`), wantErr: "body is not a JSON object"},
		{name: "array", body: []byte(`[]`), wantErr: "body is not a JSON object"},
		{name: "no event", body: []byte(`{"data":{}}`), wantErr: `body has no "event"`},
		{name: "no data", body: []byte(`{"event":"track_updated"}`), wantErr: `body has no "data"`},
		{name: "null data", body: []byte(`{"event":"track_updated","data":null}`), wantErr: `body has no "data"`},
	})
}
