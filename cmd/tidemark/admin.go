package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/provider"
)

// withStore runs fn on a store opened from the environment.
func (e cliEnv) withStore(ctx context.Context, fn func(*postgres.Store) error) error {
	db, err := e.openDatabase(ctx, false)
	if err != nil {
		return err
	}
	defer db.close()
	return fn(db.store)
}

// withTenant runs fn on a store opened from the environment and the tenant
// with that slug.
func (e cliEnv) withTenant(ctx context.Context, slug string, fn func(*postgres.Store, domain.Tenant) error) error {
	return e.withStore(ctx, func(s *postgres.Store) error {
		t, err := s.Tenant(ctx, slug)
		if err != nil {
			return err
		}
		return fn(s, t)
	})
}

func (e cliEnv) migrate(ctx context.Context, args []string) error {
	fs := e.flags("migrate", "migrate\n\nApply pending database migrations and exit.")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := postgres.Migrate(ctx, s.Pool(), e.stdout); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "database is up to date")
		return nil
	})
}

// leadingArg takes a positional argument written before the flags
// ("tenant create acme --name Acme"), which package flag would not parse.
func leadingArg(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func (e cliEnv) tenantCreate(ctx context.Context, args []string) error {
	fs := e.flags("tenant create", "tenant create SLUG [--name NAME]\n\nCreate a tenant (a customer workspace).")
	name := fs.String("name", "", "display name (default: the slug)")
	slug, rest := leadingArg(args)
	want := 0
	if slug == "" {
		want = 1
	}
	pos, err := parse(fs, rest, want)
	if err != nil {
		return err
	}
	if slug == "" {
		slug = pos[0]
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		t, err := s.CreateTenant(ctx, slug, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created tenant %s (%s)\n", t.Slug, t.Name)
		return nil
	})
}

func (e cliEnv) providerCreate(ctx context.Context, args []string) error {
	fs := e.flags("provider create", "provider create --tenant SLUG --name NAME --kind KIND [--secret SECRET] [kind flags]\n\n"+
		"Connect a webhook provider to a tenant. Prints its signing secret or token as the last line.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "provider name, unique within the tenant (required)")
	kind := fs.String("kind", "", "provider kind: standard, hubspot, shippo or salesforce (required)")
	secret := fs.String("secret", "", `standard: "whsec_" + base64; hubspot: the app's client secret; shippo: the HMAC secret or URL token (default: generated)`)
	settings := kindFlags(fs)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" || *kind == "" {
		fs.Usage()
		return fmt.Errorf("provider create: --tenant, --name and --kind are required")
	}
	finalSecret, config, err := provider.Setup(*kind, *secret, settings())
	if err != nil {
		return err
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		if _, err := s.ConnectProvider(ctx, t.ID, *name, *kind, finalSecret, config); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created %s provider %s for tenant %s\nwebhook URL path: /webhooks/%s/%s\n", *kind, *name, *tenant, *tenant, *name)
		if finalSecret == "" {
			fmt.Fprintf(e.stdout, "this kind signs nothing; deliveries are checked against its settings\n/webhooks/%s/%s\n", *tenant, *name)
			return nil
		}
		fmt.Fprintf(e.stdout, "signing secret or token (shown once):\n%s\n", finalSecret)
		return nil
	})
}

// kindFlags registers a flag for every setting of every kind, as the kinds
// describe them, and returns a function reading the ones given into a
// provider's config.
func kindFlags(fs *flag.FlagSet) func() map[string]string {
	type setting struct {
		key string
		on  *bool
		str *string
	}
	var settings []setting
	seen := map[string]bool{}
	for _, name := range provider.Names() {
		k, _ := provider.Lookup(name)
		for _, f := range k.Form().Fields {
			if f.Secret || f.Flag == "" || seen[f.Flag] {
				continue
			}
			seen[f.Flag] = true
			flagName := strings.TrimPrefix(f.Flag, "--")
			if f.Input == "checkbox" {
				settings = append(settings, setting{key: f.Config, on: fs.Bool(flagName, false, f.Usage)})
			} else {
				settings = append(settings, setting{key: f.Config, str: fs.String(flagName, "", f.Usage)})
			}
		}
	}
	return func() map[string]string {
		config := map[string]string{}
		for _, s := range settings {
			switch {
			case s.on != nil && *s.on:
				config[s.key] = "true"
			case s.str != nil && *s.str != "":
				config[s.key] = *s.str
			}
		}
		return config
	}
}

func (e cliEnv) providerRotate(ctx context.Context, args []string) error {
	fs := e.flags("provider rotate", "provider rotate --tenant SLUG --name NAME [--secret SECRET]\n\n"+
		"Add a new signing secret. The previous one keeps working until the next rotation,\n"+
		"so senders can switch without dropping deliveries. Prints the new secret as the last line.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "provider name (required)")
	secret := fs.String("secret", "", "new signing secret (default: generated)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider rotate: --tenant and --name are required")
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		p, err := s.ProviderSummary(ctx, t.ID, *name)
		if err != nil {
			return err
		}
		if *secret == "" {
			*secret, err = provider.NewSecret(p.Provider)
		} else {
			_, _, err = provider.Setup(p.Kind, *secret, p.Config)
		}
		if err != nil {
			return err
		}
		if err := s.RotateProviderSecret(ctx, t.ID, p.ID, *secret); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "rotated the signing secret of %s/%s; the previous secret stays active until the next rotation\n%s\n",
			*tenant, *name, *secret)
		return nil
	})
}

func (e cliEnv) tokenCreate(ctx context.Context, args []string) error {
	fs := e.flags("token create", "token create --tenant SLUG [--name NAME]\n\n"+
		"Create an API token for one tenant. Prints it as the last line; it is not stored and cannot be shown again.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "a name to recognise the token by")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("token create: --tenant is required")
	}
	if *name == "" {
		*name = "token created " + time.Now().UTC().Format(time.DateTime)
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		token, err := s.CreateAPIToken(ctx, t.ID, *name)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "API token for tenant %s (shown once):\n%s\n", *tenant, token)
		return nil
	})
}

func (e cliEnv) userCreate(ctx context.Context, args []string) error {
	fs := e.flags("user create", "user create --email EMAIL --password-stdin [--admin] [--tenant SLUG]\n\n"+
		"Create a console operator. The password is read from the first line of standard input.")
	email := fs.String("email", "", "login email (required)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input (required)")
	admin := fs.Bool("admin", false, "the operator sees every tenant")
	tenant := fs.String("tenant", "", "make the operator a member of this tenant")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" || !*fromStdin {
		fs.Usage()
		return fmt.Errorf("user create: --email and --password-stdin are required")
	}
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" && err != nil {
		return fmt.Errorf("user create: no password on standard input: %w", err)
	}
	if password == "" {
		return fmt.Errorf("user create: the first line of standard input is empty; it must hold the password")
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := s.CreateUser(ctx, *email, password, *admin, *tenant); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created operator %s\n", strings.ToLower(*email))
		return nil
	})
}

func (e cliEnv) cleanup(ctx context.Context, args []string) error {
	fs := e.flags("cleanup", "cleanup [--retention 720h]\n\n"+
		"Run one maintenance pass, then exit: remove expired idempotency keys and event-log\n"+
		"partitions past retention, and prepare the partitions of the next 30 days. A pass\n"+
		"is skipped while another process runs one; steps that wait on a long transaction\n"+
		"are deferred to the next pass.")
	retention := fs.Duration("retention", defaultRetention, retentionUsage)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := checkRetention(ctx, s, *retention); err != nil {
			return err
		}
		report, err := s.Cleanup(ctx, time.Now(), *retention)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, report)
		return nil
	})
}

const defaultRetention = 30 * 24 * time.Hour

// retentionUsage is the help of serve's and cleanup's --retention.
const retentionUsage = "how long the event log and deliveries are kept (at least 168h and the largest scope TTL)"

// checkRetention refuses a --retention the store refuses, saying why.
func checkRetention(ctx context.Context, s *postgres.Store, retention time.Duration) error {
	err := s.CheckRetention(ctx, retention)
	if domain.ErrorCode(err) == domain.EINVALID {
		return errors.New("--retention: " + domain.ErrorMessage(err))
	}
	return err
}
