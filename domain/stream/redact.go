package stream

import (
	"net/url"
	"slices"
	"strings"
)

// Redacted stands for what a redacted URL leaves out.
const Redacted = "<redacted>"

// slackHooks are the hosts of Slack's incoming webhooks, whose path is
// their secret.
var slackHooks = []string{"hooks.slack.com", "hooks.slack-gov.com"}

// RedactURL is raw as everyone but the owners of what it points at sees it
// (alert summaries and messages, attempts' errors, status reasons, logs,
// the audit log, the command line): its scheme, host and path, with its
// user information, query and fragment each replaced by Redacted, since
// any of them may hold a credential. The path goes too
// (https://hooks.slack.com/<redacted>) when secretPath or when the host is
// Slack's incoming webhooks': their secret is the path. A URL without a
// host is Redacted whole.
func RedactURL(raw string, secretPath bool) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Redacted
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(Redacted + "@")
	}
	b.WriteString(u.Host)
	query := u.RawQuery != "" || u.ForceQuery
	fragment := u.Fragment != "" || u.RawFragment != ""
	if secretPath || slices.Contains(slackHooks, strings.ToLower(u.Hostname())) {
		if u.Path != "" && u.Path != "/" || query || fragment {
			b.WriteString("/" + Redacted)
		}
		return b.String()
	}
	b.WriteString(u.EscapedPath())
	if query {
		b.WriteString("?" + Redacted)
	}
	if fragment {
		b.WriteString("#" + Redacted)
	}
	return b.String()
}

// RedactedTarget is Target as RedactURL shows it, the path of a Slack
// destination's URL included. The whole URL is for the destination's own
// page and API only, which its tenant's owners and read-write tokens see.
func (d Destination) RedactedTarget() string {
	return RedactURL(d.endpoint(), d.Format == FormatSlack) + d.subjects()
}
