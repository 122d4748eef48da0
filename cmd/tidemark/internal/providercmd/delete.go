// Package providercmd is tidemark provider delete: an owner's removal of
// a provider (docs/contract/cli.md), which without --confirm says what it
// would remove and changes nothing.
package providercmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// Store is what provider delete uses.
type Store interface {
	ProviderSummary(ctx context.Context, tenantID int64, name string) (domain.ProviderSummary, error)
	domain.ProviderRemover
}

// Env is what the command uses of the tidemark command's environment.
type Env struct {
	Stdout io.Writer
	// Flags is the FlagSet of the command named.
	Flags func(name string) *flag.FlagSet
	// WithTenant runs fn on the database's store and the tenant of slug.
	WithTenant func(ctx context.Context, slug string, fn func(Store, domain.Tenant) error) error
}

type deleteOptions struct {
	tenant, provider *string
	confirm, erase   *bool
}

// DeleteFlags declares provider delete's flags.
func DeleteFlags(fs *flag.FlagSet) deleteOptions {
	o := deleteOptions{tenant: fs.String("tenant", "", "tenant slug (required)"),
		provider: fs.String("provider", "", "provider name (required)")}
	cli.Alias(fs, "name", "provider")
	o.confirm = fs.Bool("confirm", false, "remove it; without it nothing changes and what would be removed is printed (required)")
	o.erase = fs.Bool("erase", false, "also erase its history (records, events, delivery bodies) as erasing a record does")
	return o
}

// Delete is provider delete.
func Delete(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("provider delete")
	o := DeleteFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *o.tenant == "" || *o.provider == "" {
		fs.Usage()
		return fmt.Errorf("provider delete: --tenant and --provider are required, and --confirm to remove it")
	}
	return e.WithTenant(ctx, *o.tenant, func(s Store, t domain.Tenant) error {
		p, err := s.ProviderSummary(ctx, t.ID, *o.provider)
		if err != nil {
			return err
		}
		path := "/webhooks/" + t.Slug + "/" + p.Name
		if !*o.confirm {
			r, err := s.ProviderRemoval(ctx, t.ID, p.ID)
			if err != nil {
				return err
			}
			history := fmt.Sprintf("keep its history (%s, %s, %s) as provider %q",
				count(r.Records, "record"), count(r.Deliveries, "delivery"), count(r.Events, "event"), p.Name+" (removed)")
			if *o.erase {
				history = fmt.Sprintf("erase its history: %s, %s and the bodies of %s",
					count(r.Records, "record"), count(r.Events, "event"), count(r.Deliveries, "delivery"))
			}
			return cli.Refused("provider delete: nothing removed without --confirm. Removing %s/%s would make POST %s answer 404, "+
				"delete %s, cancel %s, and %s", t.Slug, p.Name, path, deleted(r), count(r.Backfills, "backfill"), history)
		}
		r, err := s.RemoveProvider(ctx, t.ID, p.ID, *o.erase)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "removed provider %s/%s: POST %s answers 404\n", t.Slug, r.Name, path)
		fmt.Fprintf(e.Stdout, "deleted %s; cancelled %s\n", deleted(r), count(r.Backfills, "backfill"))
		if r.Erased != nil {
			x := r.Erased
			fmt.Fprintf(e.Stdout, "erased %s, %s, %s, %s, %s\n", count(x.Records, "record"), count(x.Events, "event"),
				count(x.Revisions, "accepted revision"), count(x.Conflicts, "conflict"), count(x.Bodies, "delivery body"))
		} else {
			fmt.Fprintf(e.Stdout, "kept its history (%s, %s, %s) as provider %q\n",
				count(r.Records, "record"), count(r.Deliveries, "delivery"), count(r.Events, "event"), r.RemovedAs)
		}
		return nil
	})
}

// deleted lists what a removal deletes.
func deleted(r domain.ProviderRemoval) string {
	return fmt.Sprintf("%s, %s, %s and %s", count(r.Secrets, "signing secret"), count(r.Credentials, "API credential"),
		count(r.CDCStreams, "CDC stream"), count(r.Installs, "app install"))
}

// count is n things, in the plural but for 1.
func count(n int64, thing string) string {
	switch {
	case n == 1:
		return "1 " + thing
	case strings.HasSuffix(thing, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(thing, "y"))
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
