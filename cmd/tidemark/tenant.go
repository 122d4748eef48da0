package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// parseSlug parses a tenant command's flags and its SLUG, which may come
// before the flags ("tenant create acme --name Acme"), where package flag
// would not parse them, or after.
func parseSlug(fs *flag.FlagSet, args []string) (string, error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		_, err := cli.Parse(fs, args[1:], 0)
		return args[0], err
	}
	pos, err := cli.Parse(fs, args, 1)
	if err != nil {
		return "", err
	}
	return pos[0], nil
}

// tenantCreateFlags declares tenant create's flags: its display name.
func tenantCreateFlags(fs *flag.FlagSet) (name *string) {
	return fs.String("name", "", "display name (default: the slug)")
}

func (e cliEnv) tenantCreate(ctx context.Context, args []string) error {
	fs := e.flags("tenant create")
	name := tenantCreateFlags(fs)
	slug, err := parseSlug(fs, args)
	if err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		t, err := s.CreateTenant(ctx, slug, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created tenant %s (%s)\n", t.Slug, t.Name)
		return nil
	})
}

// tenantUpdateFlags declares tenant update's flags: the limits it sets.
func tenantUpdateFlags(fs *flag.FlagSet) (maxDestinations *int) {
	return fs.Int("max-destinations", -1, "how many destinations the tenant may have (required; 0 to 10000)")
}

func (e cliEnv) tenantUpdate(ctx context.Context, args []string) error {
	fs := e.flags("tenant update")
	maxDestinations := tenantUpdateFlags(fs)
	if len(args) == 0 {
		return fmt.Errorf("tenant update: SLUG and --max-destinations N are required")
	}
	slug, err := parseSlug(fs, args)
	if err != nil {
		return err
	}
	var u domain.TenantUpdate
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "max-destinations" {
			u.MaxDestinations = maxDestinations
		}
	})
	return e.withStore(ctx, func(s cliStore) error {
		t, err := s.UpdateTenant(ctx, slug, u)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "updated tenant %s: at most %d destinations\n", t.Slug, t.MaxDestinations)
		return nil
	})
}
