package provider

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestStandardSetup(t *testing.T) {
	t.Parallel()
	secret, _, err := Setup("standard", "", nil)
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("generated: %q %v", secret, err)
	}
	if got, _, err := Setup("standard", "whsec_dGVzdA==", nil); err != nil || got != "whsec_dGVzdA==" {
		t.Fatalf("given: %q %v", got, err)
	}
	_, _, err = Setup("standard", "plain", nil)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "secret" || domain.ErrorCode(err) != domain.EINVALID ||
		!strings.HasPrefix(err.Error(), `secret must be "whsec_" followed by base64 (for example whsec_`) {
		t.Fatalf("plain secret: %v", err)
	}
}

func TestStandardAuthenticateErrors(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"contact.snapshot","data":{"contact_id":"c-1","revision":1,"snapshot":{}}}`)
	signed := func(secret string, at int64, body []byte) map[string]string {
		sig, err := SignStandard(secret, "msg_1", at, body)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"webhook-id": "msg_1", "webhook-timestamp": strconv.FormatInt(at, 10), "webhook-signature": sig}
	}
	now := testNow.Unix()
	with := func(h map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for hk, hv := range h {
			if hk != k {
				out[hk] = hv
			}
		}
		return out
	}
	good := signed(secret, now, body)
	runAuthCases(t, standard{}, []authCase{
		{name: "valid", secrets: []string{secret}, headers: good, body: body, wantVerdict: domain.SignatureValid},
		{name: "no headers", secrets: []string{secret}, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "the webhook-id, webhook-timestamp and webhook-signature headers are required"},
		{name: "no signature", secrets: []string{secret}, headers: with(good, "webhook-signature", ""), body: body,
			wantVerdict: domain.SignatureMissing, wantErr: "headers are required"},
		{name: "timestamp not a number", secrets: []string{secret}, headers: with(good, "webhook-timestamp", "soon"), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "webhook-timestamp must be unix seconds"},
		{name: "too old", secrets: []string{secret}, headers: signed(secret, now-6*60, body), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "webhook-timestamp is 6m0s from the server clock"},
		{name: "too new", secrets: []string{secret}, headers: signed(secret, now+6*60, body), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "more than 5 minutes is refused"},
		{name: "other secret", secrets: []string{NewStandardSecret()}, headers: good, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches an active secret"},
		{name: "no usable secret", secrets: []string{"not-base64!"}, headers: good, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches"},
		{name: "tampered body", secrets: []string{secret}, headers: good, body: bytes.Replace(body, []byte("c-1"), []byte("c-2"), 1),
			wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches"},
		{name: "other version", secrets: []string{secret}, headers: with(good, "webhook-signature", strings.Replace(good["webhook-signature"], "v1,", "v2,", 1)),
			body: body, wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches"},
		{name: "not base64", secrets: []string{secret}, headers: with(good, "webhook-signature", "v1,@@@"), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches"},
		{name: "other id", secrets: []string{secret}, headers: with(good, "webhook-id", "msg_2"), body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no webhook-signature matches"},
	})
}

func TestStandardParseErrors(t *testing.T) {
	t.Parallel()
	id := map[string]string{"webhook-id": "msg_1"}
	runParseCases(t, standard{}, []parseCase{
		{name: "not UTF-8", headers: id, body: []byte("{\"type\":\"a.b\xff\"}"), wantErr: "body is not valid UTF-8"},
		{name: "long id", headers: map[string]string{"webhook-id": strings.Repeat("m", 256)}, body: []byte(`{"type":"a.b"}`),
			wantErr: "webhook-id must be at most 255 printable characters"},
		{name: "unprintable id", headers: map[string]string{"webhook-id": "msg\x7f1"}, body: []byte(`{"type":"a.b"}`),
			wantErr: "webhook-id must be at most 255 printable characters"},
		{name: "not JSON", headers: id, body: []byte(`type=a.b`), wantErr: "body is not a JSON object"},
		{name: "array", headers: id, body: []byte(`[{"type":"a.b"}]`), wantErr: "body is not a JSON object"},
		{name: "no type", headers: id, body: []byte(`{"data":{}}`), wantErr: `body has no "type"`},
		{name: "type without action", headers: id, body: []byte(`{"type":"contact"}`), wantErr: `"type" must be "<object type>.<action>"`},
		{name: "type without object", headers: id, body: []byte(`{"type":".snapshot"}`), wantErr: `"type" must be`},
		{name: "type too long", headers: id, body: []byte(`{"type":"a.` + strings.Repeat("b", 200) + `"}`), wantErr: `"type" must be`},
	})
}

// TestStandardSvixHeaders: senders running on Svix name the
// headers svix-id, svix-timestamp and svix-signature; they are checked
// exactly as the webhook-* names, which win when both are sent.
func TestStandardSvixHeaders(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"contact.snapshot","data":{"contact_id":"c-1","revision":1,"snapshot":{}}}`)
	now := testNow.Unix()
	svix := func(id string, at int64, body []byte) map[string]string {
		sig, err := SignStandard(secret, id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"svix-id": id, "svix-timestamp": strconv.FormatInt(at, 10), "svix-signature": sig}
	}
	good := svix("msg_svix", now, body)
	both := svix("msg_svix", now, body)
	sig, _ := SignStandard(secret, "msg_std", now, body)
	both["webhook-id"], both["webhook-timestamp"], both["webhook-signature"] = "msg_std", strconv.FormatInt(now, 10), sig
	partial := svix("msg_svix", now, body)
	delete(partial, "svix-signature")
	runAuthCases(t, standard{}, []authCase{
		{name: "valid svix", secrets: []string{secret}, headers: good, body: body, wantVerdict: domain.SignatureValid},
		{name: "both sets", secrets: []string{secret}, headers: both, body: body, wantVerdict: domain.SignatureValid},
		{name: "svix without signature", secrets: []string{secret}, headers: partial, body: body, wantVerdict: domain.SignatureMissing,
			wantErr: "svix-id, svix-timestamp and svix-signature"},
		{name: "svix too old", secrets: []string{secret}, headers: svix("msg_svix", now-6*60, body), body: body,
			wantVerdict: domain.SignatureExpired, wantErr: "svix-timestamp is 6m0s from the server clock"},
		{name: "svix other secret", secrets: []string{NewStandardSecret()}, headers: good, body: body,
			wantVerdict: domain.SignatureInvalid, wantErr: "no svix-signature matches an active secret"},
		{name: "svix tampered body", secrets: []string{secret}, headers: good, body: bytes.Replace(body, []byte("c-1"), []byte("c-2"), 1),
			wantVerdict: domain.SignatureInvalid, wantErr: "no svix-signature matches"},
	})
	r, _ := http.NewRequest(http.MethodPost, "/", nil)
	for name, h := range map[string]map[string]string{"msg_svix": good, "msg_std": both} {
		for k, v := range h {
			r.Header.Set(k, v)
		}
		events, err := standard{}.Parse(r, body, domain.ProviderEndpoint{})
		if err != nil || len(events) != 1 || events[0].EventID != name {
			t.Errorf("parse: %+v %v, want event id %s", events, err, name)
		}
		r.Header = http.Header{}
	}
	if !CredentialHeader("standard", "Svix-Signature") {
		t.Error("svix-signature is not redacted")
	}
}
