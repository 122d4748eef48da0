// Package destination checks what an owner gives for a destination before
// it is stored, where the API, the console and the CLI share it: the form
// (stream.NewDestination.Check) and, after DNS resolution, whether its
// address may be reached (internal/egress). Storage calls out to nothing,
// so this check is not its.
package destination

import (
	"context"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/outbound"
)

// Check validates nd, and that a NATS destination's credentials parse, and
// refuses a URL whose host is or resolves to a loopback, private,
// link-local or metadata address unless nd.AllowPrivate, which only the
// CLI sets. Every refusal is EINVALID and names the host, never what it
// resolved to nor the resolver's error: egress.Detail(err) has those, for
// the server log.
func Check(ctx context.Context, nd stream.NewDestination) (stream.NewDestination, error) {
	nd, err := nd.Check()
	if err != nil {
		return nd, err
	}
	field, check, raw := "url", egress.CheckURL, nd.URL
	if nd.NATSURL != "" {
		field, check, raw = "nats_url", egress.CheckNATSURL, nd.NATSURL
		if err := outbound.CheckNATSAuth(nd.NATS); err != nil {
			return nd, err
		}
	}
	if _, err := check(ctx, raw, nd.AllowPrivate); err != nil {
		// egress names the field "url" and never repeats the URL.
		refusal := domain.Errorf(domain.EINVALID, "%s: %s", field, strings.TrimPrefix(err.Error(), "url: "))
		return nd, refusalOf{refusal, err}
	}
	return nd, nil
}

// refusalOf is a refusal: EINVALID, and the egress error it says (which
// wraps egress.ErrPrivate for a private address, so that the CLI can point
// at --allow-private, and holds egress.Detail for the server log).
type refusalOf struct {
	refusal *domain.Error
	egress  error
}

func (r refusalOf) Error() string   { return r.refusal.Error() }
func (r refusalOf) Unwrap() []error { return []error{r.refusal, r.egress} }
