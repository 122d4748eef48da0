// Package alertjson is the body of a destination's alert message
// (docs/contract/destinations.md#alerts): the standard form, like a
// change's message, and the Slack-compatible one.
package alertjson

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
)

// Alert is an alert as a standard message's data shows it.
type Alert struct {
	ID int64 `json:"id"`
	// Rule is the alert's rule, such as provider_silent.
	Rule string `json:"rule"`
	// Provider names the provider of a per-provider rule; omitted for the
	// others.
	Provider   string  `json:"provider,omitempty"`
	Summary    string  `json:"summary"`
	Value      int64   `json:"value"`
	Threshold  int64   `json:"threshold"`
	Window     string  `json:"window"` // a Go duration: 6h0m0s
	StartedAt  string  `json:"started_at"`
	ResolvedAt *string `json:"resolved_at"` // null while firing
}

// Message is a standard alert message.
type Message struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      Alert  `json:"data"`
}

// From is e's standard message.
func From(e alerting.Event) Message {
	a := e.Alert
	j := Alert{ID: a.ID, Rule: string(a.Rule), Provider: a.Provider, Summary: a.Summary, Value: a.Value,
		Threshold: a.Threshold, Window: a.Window.String(), StartedAt: changejson.Time(a.StartedAt)}
	if a.ResolvedAt != nil {
		t := changejson.Time(*a.ResolvedAt)
		j.ResolvedAt = &t
	}
	return Message{Type: e.Type, Timestamp: changejson.Time(e.At), Data: j}
}

// Text is e as one line for a chat: what happened, in which workspace
// (tenant, its slug).
func Text(tenant string, e alerting.Event) string {
	summary := strings.Join(strings.Fields(e.Alert.Summary), " ")
	if e.Type == alerting.EventResolved {
		return ":white_check_mark: Tidemark " + tenant + " resolved: " + summary
	}
	return ":rotating_light: Tidemark " + tenant + ": " + summary
}

// slackEscape escapes what Slack reads as markup: &, < and >.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Marshal is the body of e's message in format (stream.FormatStandard or
// stream.FormatSlack) for tenant's destination.
func Marshal(format, tenant string, e alerting.Event) ([]byte, error) {
	if format == stream.FormatSlack {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // Slack's own escapes are in the text already
		err := enc.Encode(struct {
			Text string `json:"text"`
		}{slackEscape.Replace(Text(tenant, e))})
		return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
	}
	return json.Marshal(From(e))
}
