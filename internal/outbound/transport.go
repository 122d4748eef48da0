package outbound

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
)

// natsError is the text of err, a failure to publish to d's server, as an
// attempt keeps it: like transportError's, it names the host and not the
// address it resolved to nor the resolver, whose text is logged at debug.
func (s *Sender) natsError(d stream.LeasedDestination, err error) string {
	host := ""
	if u, perr := url.Parse(d.NATSURL); perr == nil {
		host = u.Hostname()
	}
	text, detail := egress.ConnError(host, err)
	if detail != "" {
		s.o.Log.Debug("destination sender: connection refused or unresolved", "tenant_id", d.TenantID,
			"destination_id", d.ID, "detail", detail)
	}
	return text
}

// transportError is the text of err, a failure to POST to d, as an
// attempt's error (and so a status reason) keeps it: Go's *url.Error quotes
// the whole URL, whose query, user information or (Slack) path may hold a
// credential, so the URL is redacted (stream.RedactURL); a refused private
// address or a failed DNS lookup names the host, not the address nor the
// resolver (egress.ConnError), whose text is logged at debug instead.
func (s *Sender) transportError(d stream.LeasedDestination, err error) string {
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
		s.o.Log.Debug("destination sender: connection refused or unresolved", "tenant_id", d.TenantID,
			"destination_id", d.ID, "detail", detail)
	}
	redacted := stream.RedactURL(d.URL, d.Format == stream.FormatSlack)
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
