package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/whsig"
)

func init() { Register(webhookKind{}) }

// webhookKind POSTs each change, and alert event in the standard format,
// as a Standard Webhooks message to an http(s) URL
// (docs/contract/destinations.md).
type webhookKind struct{}

func (webhookKind) Name() string                 { return "webhook" }
func (webhookKind) Format() string               { return stream.FormatStandard }
func (webhookKind) Accepts(types []string) error { return nil }

func (k webhookKind) Check(nd stream.NewDestination) (stream.NewDestination, error) {
	return checkHTTP(k, nd)
}

func (webhookKind) Reach(ctx context.Context, nd stream.NewDestination) error {
	return reachHTTP(ctx, nd)
}

func (webhookKind) Open(o Options) Conn { return webhookConn{newPoster(o, false)} }

type webhookConn struct{ p *poster }

func (c webhookConn) Send(ctx context.Context, d stream.LeasedDestination, m stream.QueuedChange) Answer {
	var body []byte
	var err error
	if m.Alert != nil {
		body, err = json.Marshal(standardAlert(*m.Alert))
	} else {
		body, err = changejson.MarshalMessage(m.Change, m.Data)
	}
	if err != nil {
		return Answer{Err: "encode: " + err.Error()}
	}
	return c.p.post(ctx, d, m.MessageID(), body)
}

func (webhookConn) Close() {}

// checkHTTP checks the fields of a destination k POSTs to: url, and
// nothing of NATS's.
func checkHTTP(k Kind, nd stream.NewDestination) (stream.NewDestination, error) {
	switch {
	case nd.URL == "" && (nd.NATSURL != "" || nd.Subject != ""):
		return nd, domain.Errorf(domain.EINVALID, "kind %s takes url, not nats_url and subject", k.Name())
	case nd.URL == "":
		return nd, domain.Errorf(domain.EINVALID, "kind %s needs url, an http or https URL to POST to", k.Name())
	}
	if err := checkURL("url", nd.URL, "http", "https"); err != nil {
		return nd, err
	}
	if !nd.NATS.IsZero() {
		return nd, domain.Errorf(domain.EINVALID, "nats_creds, nats_nkey and nats_tls_ca go with nats_url, not url")
	}
	return nd, nil
}

// reachHTTP refuses a URL whose host is or resolves to a loopback,
// private, link-local or metadata address, unless nd.AllowPrivate.
func reachHTTP(ctx context.Context, nd stream.NewDestination) error {
	if _, err := egress.CheckURL(ctx, nd.URL, nd.AllowPrivate); err != nil {
		return Refuse("url", err)
	}
	return nil
}

// Bounds of what is read of an answer, and kept of it in an attempt's
// error.
const (
	maxAnswerRead = 4 << 10
	maxAnswerKept = 200
)

// poster POSTs messages, signed, to destinations' URLs, through clients
// that refuse private addresses unless the destination allows them.
type poster struct {
	o          Options
	clients    map[bool]*http.Client // by allow_private
	secretPath bool                  // the URL's path is a secret: errors quote it redacted (stream.RedactURL)
}

func newPoster(o Options, secretPath bool) *poster {
	return &poster{o: o, secretPath: secretPath,
		clients: map[bool]*http.Client{false: egress.NewClient(false, o.Timeout), true: egress.NewClient(true, o.Timeout)}}
}

// post POSTs body, the message id, to d's URL, signed with d's secrets.
func (p *poster) post(ctx context.Context, d stream.LeasedDestination, id string, body []byte) Answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{Err: p.transportError(d, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Tidemark")
	if err := whsig.Headers(req.Header, d.Secrets, id, time.Now(), body); err != nil {
		return Answer{Err: err.Error()}
	}
	resp, err := p.clients[d.AllowPrivate].Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return Answer{Err: fmt.Sprintf("timeout: no answer within %s", p.o.Timeout)}
		}
		return Answer{Err: p.transportError(d, err)}
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerRead))
	a := Answer{Status: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Err = fmt.Sprintf("answered %s", resp.Status)
		if e := printable(excerpt); e != "" {
			a.Err += ": " + e
		}
	}
	return a
}

// transportError is the text of err, a failure to POST to d, as an
// attempt's error (and so a status reason) keeps it: Go's *url.Error quotes
// the whole URL, whose query, user information or (Slack) path may hold a
// credential, so the URL is redacted (stream.RedactURL); a refused private
// address or a failed DNS lookup names the host, not the address nor the
// resolver (egress.ConnError), whose text is logged at debug instead.
func (p *poster) transportError(d stream.LeasedDestination, err error) string {
	op, cause := "", err
	var ue *url.Error
	if errors.As(err, &ue) {
		op, cause = ue.Op, ue.Err
	}
	u, perr := url.Parse(d.URL)
	if perr != nil {
		u = &url.URL{}
	}
	text, detail := egress.ConnError(u.Hostname(), cause)
	if detail != "" {
		p.o.Log.Debug("destination sender: connection refused or unresolved", "tenant_id", d.TenantID,
			"destination_id", d.ID, "detail", detail)
	}
	redacted := stream.RedactURL(d.URL, p.secretPath)
	if op != "" {
		text = fmt.Sprintf("%s %q: %s", op, redacted, text)
	}
	// Whatever else may quote the URL or its query gets the redacted form.
	if d.URL != "" {
		text = strings.ReplaceAll(text, d.URL, redacted)
	}
	if len(u.RawQuery) >= 4 {
		text = strings.ReplaceAll(text, u.RawQuery, stream.Redacted)
	}
	return text
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent or
// unreadable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// printable is the start of an answer's body as one line of text.
func printable(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 && sb.Len() < maxAnswerKept {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r == utf8.RuneError:
			sb.WriteRune('?')
		case unicode.IsSpace(r):
			sb.WriteByte(' ')
		case unicode.IsPrint(r):
			sb.WriteRune(r)
		}
	}
	return strings.TrimSpace(sb.String())
}

// alertJSON is an alert as a standard message's data shows it
// (docs/contract/destinations.md#alerts).
type alertJSON struct {
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

// alertMessage is a standard alert message, like a change's.
type alertMessage struct {
	Type      string    `json:"type"`
	Timestamp string    `json:"timestamp"`
	Data      alertJSON `json:"data"`
}

// standardAlert is e's standard message.
func standardAlert(e alerting.Event) alertMessage {
	a := e.Alert
	j := alertJSON{ID: a.ID, Rule: string(a.Rule), Provider: a.Provider, Summary: a.Summary, Value: a.Value,
		Threshold: a.Threshold, Window: a.Window.String(), StartedAt: changejson.Time(a.StartedAt)}
	if a.ResolvedAt != nil {
		t := changejson.Time(*a.ResolvedAt)
		j.ResolvedAt = &t
	}
	return alertMessage{Type: e.Type, Timestamp: changejson.Time(e.At), Data: j}
}
