package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
)

func init() { Register(slackKind{}) }

// slackKind POSTs each alert event as one line of text, {"text": ...}, to
// a Slack-compatible incoming webhook, signed like a webhook's message
// (docs/contract/destinations.md#alerts). A record change has no such
// form: it takes alert types only.
type slackKind struct{}

func (slackKind) Name() string   { return "slack" }
func (slackKind) Format() string { return stream.FormatSlack }

func (slackKind) Accepts(types []string) error {
	if stream.HasRecordTypes(types) {
		return domain.Errorf(domain.EINVALID, "types: format slack takes alert types only (alert.*, alert.fired, alert.resolved); a record change has no Slack form, so send record.* to a standard destination")
	}
	return nil
}

func (k slackKind) Check(nd stream.NewDestination) (stream.NewDestination, error) {
	return checkHTTP(k, nd)
}

func (slackKind) Reach(ctx context.Context, nd stream.NewDestination) error {
	return reachHTTP(ctx, nd)
}

// Open's poster quotes URLs without their path: an incoming webhook's path
// is its secret.
func (slackKind) Open(o Options) Conn { return slackConn{newPoster(o, true)} }

type slackConn struct{ p *poster }

func (c slackConn) Send(ctx context.Context, d stream.LeasedDestination, m stream.QueuedChange) Answer {
	if m.Alert == nil { // refused at creation
		return Answer{Err: "not sent: a slack destination takes alert types only"}
	}
	body, err := slackBody(d.TenantSlug, *m.Alert)
	if err != nil {
		return Answer{Err: "encode: " + err.Error()}
	}
	return c.p.post(ctx, d, m.MessageID(), body)
}

func (slackConn) Close() {}

// slackBody is e's message for tenant's slack destination.
func slackBody(tenant string, e alerting.Event) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // Slack's own escapes are in the text already
	err := enc.Encode(struct {
		Text string `json:"text"`
	}{slackEscape.Replace(alertText(tenant, e))})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// alertText is e as one line for a chat: what happened, in which
// workspace (tenant, its slug).
func alertText(tenant string, e alerting.Event) string {
	summary := strings.Join(strings.Fields(e.Alert.Summary), " ")
	if e.Type == alerting.EventResolved {
		return ":white_check_mark: Tidemark " + tenant + " resolved: " + summary
	}
	return ":rotating_light: Tidemark " + tenant + ": " + summary
}

// slackEscape escapes what Slack reads as markup: &, < and >.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
