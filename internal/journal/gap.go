package journal

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
)

// fillGap searches, through backfill's runner, the records of the
// provider's object types modified in [from, to), and returns how many
// changes it applied. The search carries the provider's private app token
// when it has one, else the install's access token. A provider without
// scopes has received nothing yet, so there is nothing to compare with.
func (r *Reader) fillGap(ctx context.Context, t *install, from, to time.Time) (int, error) {
	if len(t.p.Scopes) == 0 {
		return 0, nil
	}
	creds, private, err := r.Store.APICredentials(ctx, t.p.TenantID, t.p.ID)
	if err != nil {
		return 0, err
	}
	sources := backfill.NewSources(nil, r.Log)
	if !private {
		creds = pull.Credentials{BaseURL: t.app.APIBaseURL, AllowPrivate: t.app.AllowPrivate}
		sources = func(context.Context, domain.ProviderEndpoint, []string, pull.Credentials) (pull.Source, error) {
			s, err := hubspot.NewForInstall(creds, t.tokens, r.Log)
			if err != nil {
				return nil, err // not a typed nil
			}
			return s, nil
		}
	}
	runner := &backfill.Runner{Store: withCredentials{r.Store, creds}, Sources: sources, Log: r.Log}
	rep, err := runner.Run(ctx, backfill.Pass{Tenant: t.in.TenantSlug, Provider: t.in.ProviderName, From: from, To: to})
	return rep.Missed(), err
}

// withCredentials gives a backfill pass the credentials chosen.
type withCredentials struct {
	domain.IngestService
	creds pull.Credentials
}

func (w withCredentials) APICredentials(context.Context, int64, int64) (pull.Credentials, bool, error) {
	return w.creds, true, nil
}
