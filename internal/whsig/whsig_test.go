package whsig

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks test vector (the one its libraries test against):
// matching it is what lets any of them verify our messages.
func TestSignMatchesTheStandardVector(t *testing.T) {
	t.Parallel()
	sig, err := Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; sig != want {
		t.Fatalf("Sign = %s, want %s", sig, want)
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, b := NewSecret(), NewSecret()
	if a == b {
		t.Fatalf("two secrets are the same: %s", a)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if !strings.HasPrefix(a, "whsec_") || err != nil || len(key) != 32 {
		t.Fatalf("NewSecret = %s: want whsec_ and 32 bytes of padded base64 (%d bytes, %v)", a, len(key), err)
	}
	if _, err := Sign([]string{a}, "msg_1", time.Now(), nil); err != nil {
		t.Fatalf("Sign refuses a new secret: %v", err)
	}
}

// During a rotation the header carries one signature per secret, in the
// order given, and a receiver holding either secret accepts the message.
func TestRotationSignsWithEverySecret(t *testing.T) {
	t.Parallel()
	old, current := NewSecret(), NewSecret()
	now := time.Now()
	body := []byte(`{"type":"contact.updated"}`)
	h := http.Header{}
	if err := Headers(h, []string{old, current}, "msg_rot", now, body); err != nil {
		t.Fatal(err)
	}
	sigs := strings.Split(h.Get("webhook-signature"), " ")
	oldOnly, _ := Sign([]string{old}, "msg_rot", now, body)
	currentOnly, _ := Sign([]string{current}, "msg_rot", now, body)
	if len(sigs) != 2 || sigs[0] != oldOnly || sigs[1] != currentOnly {
		t.Fatalf("webhook-signature = %q, want %q then %q", h.Get("webhook-signature"), oldOnly, currentOnly)
	}
	for _, secret := range []string{old, current} {
		if err := Verify(secret, h, body, now, 5*time.Minute); err != nil {
			t.Errorf("Verify with one of the two secrets: %v", err)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	ts := time.Unix(1700000000, 999_000_000)
	h := http.Header{}
	if err := Headers(h, []string{NewSecret()}, "msg_h", ts, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if h.Get("webhook-id") != "msg_h" || h.Get("webhook-timestamp") != "1700000000" || !strings.HasPrefix(h.Get("webhook-signature"), "v1,") {
		t.Fatalf("headers = %v", h)
	}
}

func TestSignRefusesInvalidInput(t *testing.T) {
	t.Parallel()
	good := NewSecret()
	for _, tc := range []struct {
		name    string
		secrets []string
		id      string
	}{
		{"no secret", nil, "msg_1"},
		{"no prefix", []string{strings.TrimPrefix(good, "whsec_")}, "msg_1"},
		{"not base64", []string{"whsec_not base64!"}, "msg_1"},
		{"empty key", []string{"whsec_"}, "msg_1"},
		{"key under 24 bytes", []string{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23))}, "msg_1"},
		{"key over 64 bytes", []string{"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))}, "msg_1"},
		{"one bad among good", []string{good, "whsec_!!"}, "msg_1"},
		{"empty id", []string{good}, ""},
		{"id with a dot", []string{good}, "msg.1"},
	} {
		sig, err := Sign(tc.secrets, tc.id, time.Now(), []byte("{}"))
		if err == nil {
			t.Errorf("%s: Sign = %q, want an error", tc.name, sig)
			continue
		}
		for _, s := range tc.secrets {
			if len(s) > len("whsec_") && strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error repeats the secret: %v", tc.name, err)
			}
		}
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	secret := NewSecret()
	signedAt := time.Unix(1700000000, 0)
	body := []byte(`{"type":"contact.created","data":{"id":"c-1"}}`)
	signed := http.Header{}
	if err := Headers(signed, []string{secret}, "msg_v", signedAt, body); err != nil {
		t.Fatal(err)
	}
	if err := Verify(secret, signed, body, signedAt.Add(4*time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("the untouched message is refused: %v", err)
	}
	with := func(name, value string) http.Header {
		h := signed.Clone()
		h.Set(name, value)
		return h
	}
	for _, tc := range []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    time.Time
	}{
		{"tampered body", secret, signed, `{"type":"contact.created","data":{"id":"c-2"}}`, signedAt},
		{"wrong secret", NewSecret(), signed, string(body), signedAt},
		{"old timestamp", secret, signed, string(body), signedAt.Add(5*time.Minute + time.Second)},
		{"timestamp from the future", secret, signed, string(body), signedAt.Add(-5*time.Minute - time.Second)},
		{"timestamp moved", secret, with("webhook-timestamp", strconv.FormatInt(signedAt.Unix()+1, 10)), string(body), signedAt},
		{"other id", secret, with("webhook-id", "msg_w"), string(body), signedAt},
		{"no signature", secret, with("webhook-signature", ""), string(body), signedAt},
		{"other version", secret, with("webhook-signature", "v1a,"+strings.TrimPrefix(signed.Get("webhook-signature"), "v1,")), string(body), signedAt},
		{"timestamp not a number", secret, with("webhook-timestamp", "soon"), string(body), signedAt},
	} {
		if err := Verify(tc.secret, tc.h, []byte(tc.body), tc.now, 5*time.Minute); err == nil {
			t.Errorf("%s: Verify accepted it", tc.name)
		}
	}
}
