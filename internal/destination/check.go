// Package destination checks what an owner gives for a destination before
// it is stored, where the API, the console and the CLI share it: the form
// (stream.NewDestination.Check) and, after DNS resolution, whether its
// address may be reached (internal/egress). Storage calls out to nothing,
// so this check is not its.
package destination

import (
	"context"
	"errors"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
)

// Check validates nd and refuses a URL whose host is or resolves to a
// loopback, private, link-local or metadata address unless
// nd.AllowPrivate, which only the CLI sets. Every refusal is EINVALID; a
// refused address is named (egress.ErrPrivate's message says why).
func Check(ctx context.Context, nd stream.NewDestination) (stream.NewDestination, error) {
	nd, err := nd.Check()
	if err != nil {
		return nd, err
	}
	field, check, raw := "url", egress.CheckURL, nd.URL
	if nd.NATSURL != "" {
		field, check, raw = "nats_url", egress.CheckNATSURL, nd.NATSURL
	}
	if _, err := check(ctx, raw, nd.AllowPrivate); err != nil {
		// egress names the field "url" and never repeats the URL.
		refusal := domain.Errorf(domain.EINVALID, "%s: %s", field, strings.TrimPrefix(err.Error(), "url: "))
		if errors.Is(err, egress.ErrPrivate) {
			return nd, privateRefusal{refusal}
		}
		return nd, refusal
	}
	return nd, nil
}

// privateRefusal is the refusal of a private address: EINVALID, and
// egress.ErrPrivate too, so that the CLI can point at --allow-private.
type privateRefusal struct{ refusal *domain.Error }

func (r privateRefusal) Error() string   { return r.refusal.Error() }
func (r privateRefusal) Unwrap() []error { return []error{r.refusal, egress.ErrPrivate} }
