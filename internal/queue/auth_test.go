package queue

import "testing"

// TestRedact: user information (a password, a token) never shows in a
// URL as logged.
func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://svc:S3cret@127.0.0.1:4222":              "nats://xxxxx@127.0.0.1:4222",
		"nats://T0KEN@h:4222,tls://u:p@x@h2:4222/?a=b@": "nats://xxxxx@h:4222,tls://xxxxx@h2:4222/?a=b@",
		"u:p@h:4222": "xxxxx@h:4222",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
