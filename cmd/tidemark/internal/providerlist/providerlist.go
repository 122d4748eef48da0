// Package providerlist is tidemark provider list: a tenant's providers,
// one line each, so that the names the other provider commands take can
// be found from the command line.
package providerlist

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
)

// Store is what the command reads.
type Store interface {
	ProviderSummaries(ctx context.Context, tenantID int64) ([]domain.ProviderSummary, error)
	APICredentialsInfo(ctx context.Context, tenantID, providerID int64) (pull.Info, bool, error)
}

// Env is what the command uses of the tidemark command's environment.
type Env struct {
	Stdout io.Writer
	// Flags is the FlagSet of the command named.
	Flags func(name string) *flag.FlagSet
	// WithTenant runs fn with the tenant of that slug, refusing an unknown
	// one as the other provider commands do.
	WithTenant func(ctx context.Context, slug string, fn func(Store, domain.Tenant) error) error
}

// Flags declares provider list's flags.
func Flags(fs *flag.FlagSet) (tenant *string) {
	return fs.String("tenant", "", "tenant slug (required)")
}

// Run is tidemark provider list.
func Run(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("provider list")
	tenant := Flags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("provider list: --tenant is required")
	}
	return e.WithTenant(ctx, *tenant, func(s Store, t domain.Tenant) error {
		ps, err := s.ProviderSummaries(ctx, t.ID)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tKIND\tSECRETS\tAPI CREDENTIALS\tDELIVERIES 24H\tLAST DELIVERY\tWEBHOOK PATH")
		for _, p := range ps {
			api, ok, err := s.APICredentialsInfo(ctx, t.ID, p.ID)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t/webhooks/%s/%s\n", p.Name, p.Kind, secrets(p.ActiveSecrets),
				credentials(api, ok), p.Deliveries24h, lastDelivery(p.LastDeliveryAt), t.Slug, p.Name)
		}
		return w.Flush()
	})
}

// secrets says how many secrets authenticate the provider's deliveries:
// two while a rotation is not yet retired.
func secrets(n int) string {
	switch n {
	case 0:
		return "none"
	case 1:
		return "1 active"
	}
	return fmt.Sprintf("%d active (rotating)", n)
}

// credentials says which API credentials backfill would pull with.
func credentials(i pull.Info, ok bool) string {
	switch {
	case !ok:
		return "-"
	case i.Secret == pull.SecretClient:
		return "client id " + i.ClientID
	}
	return i.Secret
}

func lastDelivery(at time.Time) string {
	if at.IsZero() {
		return "-"
	}
	return at.UTC().Format(time.RFC3339)
}
