// Package pull is what reading from providers' APIs needs beside the
// sources themselves (one package per kind below it, registered with
// internal/backfill): the check of a provider's API credentials before
// they are stored, where the console and the CLI share it. It applies the
// rules of the kind's API (pull.Credentials.Check, the kind's pull.API
// from its registry entry) and, after DNS resolution, whether the login or
// base URL may be reached (internal/egress). Storage calls out to nothing,
// so this check is not its.
package pull

import (
	"context"
	"strings"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/provider"
)

// CheckCredentials validates c as the API credentials of a provider of kind and
// returns it completed with the defaults. A login or base URL whose host is
// or resolves to a loopback, private, link-local or metadata address is
// refused unless c.AllowPrivate, which only the CLI sets. Every refusal is
// EINVALID; that of a private address also wraps egress.ErrPrivate, so the
// CLI can point at --allow-private. It names the host, never what it
// resolved to nor the resolver's error: egress.Detail(err) has those, for
// the server log.
func CheckCredentials(ctx context.Context, kind string, c pull.Credentials) (pull.Credentials, error) {
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
			return c, refusalOf{refusal, err}
		}
	}
	return c, nil
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
