package stream

import "testing"

// RedactURL keeps the scheme, host and path and replaces what may hold a
// credential; a Slack webhook's path is its secret, so it goes too.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw        string
		secretPath bool
		want       string
	}{
		{"https://hooks.example.net/in", false, "https://hooks.example.net/in"},
		{"https://hooks.example.net/in?token=S3cr3t", false, "https://hooks.example.net/in?<redacted>"},
		{"https://hooks.example.net:8443/a/b?", false, "https://hooks.example.net:8443/a/b?<redacted>"},
		{"https://user:pw@hooks.example.net/in", false, "https://<redacted>@hooks.example.net/in"},
		{"https://hooks.example.net/in#key=S3cr3t", false, "https://hooks.example.net/in#<redacted>"},
		{"HTTPS://Hooks.Example.net/a%20b?x=1", false, "https://Hooks.Example.net/a%20b?<redacted>"},
		{"https://hooks.slack.com/services/T000/B000/XXXXXXXX", false, "https://hooks.slack.com/<redacted>"},
		{"https://HOOKS.SLACK.COM/services/T000/B000/XXXXXXXX", false, "https://HOOKS.SLACK.COM/<redacted>"},
		{"https://hooks.slack-gov.com/services/T000/B000/XXXXXXXX", false, "https://hooks.slack-gov.com/<redacted>"},
		{"https://chat.example.com/hooks/abc123", true, "https://chat.example.com/<redacted>"},
		{"https://chat.example.com/", true, "https://chat.example.com"},
		{"nats://nats.example.com:4222?token=x", false, "nats://nats.example.com:4222?<redacted>"},
		{"mailto:a@example.com", false, "<redacted>"},
		{"https://hooks.example.net/\x7f", false, "<redacted>"},
	} {
		if got := RedactURL(tc.raw, tc.secretPath); got != tc.want {
			t.Errorf("RedactURL(%q, %v) = %q, want %q", tc.raw, tc.secretPath, got, tc.want)
		}
	}
}

// RedactedTarget redacts a slack destination's path whatever its host (a
// Slack-compatible webhook of another chat keeps its secret there too),
// and a NATS destination's URL beside its subject.
func TestRedactedTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    Destination
		want string
	}{
		{Destination{URL: "https://hooks.example.net/in?token=S3cr3t", Format: FormatStandard}, "https://hooks.example.net/in?<redacted>"},
		{Destination{URL: "https://chat.example.com/hooks/abc123", Format: FormatSlack}, "https://chat.example.com/<redacted>"},
		{Destination{NATSURL: "tls://nats.example.com:4222", Subject: "crm.changes"}, "tls://nats.example.com:4222 crm.changes.>"},
	} {
		if got := tc.d.RedactedTarget(); got != tc.want {
			t.Errorf("%+v: RedactedTarget() = %q, want %q", tc.d, got, tc.want)
		}
	}
}
