// Package pullcreds checks a provider's API credentials before they are
// stored, where the console and the CLI share it: the rules of the kind's
// API (pull.Credentials.Check, the kind's pull.API from its registry
// entry) and, after DNS resolution, whether the login or base URL may be
// reached (internal/egress). Storage calls out to nothing, so this check
// is not its.
package pullcreds

import (
	"context"
	"errors"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/provider"
)

// Check validates c as the API credentials of a provider of kind and
// returns it completed with the defaults. A login or base URL whose host is
// or resolves to a loopback, private, link-local or metadata address is
// refused unless c.AllowPrivate, which only the CLI sets. Every refusal is
// EINVALID; that of a private address also wraps egress.ErrPrivate, so the
// CLI can point at --allow-private.
func Check(ctx context.Context, kind string, c pull.Credentials) (pull.Credentials, error) {
	c, err := c.Check(kind, provider.PullAPI(kind))
	if err != nil {
		return c, err
	}
	for _, u := range []struct{ what, raw string }{{"login URL", c.LoginURL}, {"API base URL", c.BaseURL}} {
		if u.raw == "" {
			continue
		}
		if _, err := egress.CheckURL(ctx, u.raw, c.AllowPrivate); err != nil {
			// egress names the field "url" and never repeats the URL.
			refusal := domain.Errorf(domain.EINVALID, "%s: %s", u.what, strings.TrimPrefix(err.Error(), "url: "))
			if errors.Is(err, egress.ErrPrivate) {
				return c, privateRefusal{refusal}
			}
			return c, refusal
		}
	}
	return c, nil
}

// privateRefusal is the refusal of a private address: EINVALID, and
// egress.ErrPrivate too.
type privateRefusal struct{ refusal *domain.Error }

func (r privateRefusal) Error() string   { return r.refusal.Error() }
func (r privateRefusal) Unwrap() []error { return []error{r.refusal, egress.ErrPrivate} }
