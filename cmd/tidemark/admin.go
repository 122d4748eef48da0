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
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
)

// withStore runs fn on a store opened from the environment.
func (e cliEnv) withStore(ctx context.Context, fn func(*postgres.Store) error) error {
	db, err := e.openDatabase(ctx, openOptions{})
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
		issued, err := issueMissingSecrets(ctx, s)
		if errors.Is(err, postgres.ErrNoKey) {
			// migrate needs no key; serve, which does, issues them.
			fmt.Fprintln(e.stderr, "providers without a secret get one when serve starts (TIDEMARK_ENCRYPTION_KEY is not set here)")
		} else if err != nil {
			return err
		}
		if len(issued) > 0 {
			fmt.Fprintf(e.stdout, "%s: %s\n", issuedSecretsNotice(issued), strings.Join(issued, ", "))
		}
		fmt.Fprintln(e.stdout, "database is up to date")
		return nil
	})
}

// issueMissingSecrets gives a secret to every provider whose kind
// authenticates with secrets but that has none: one connected before its
// kind needed one, as Salesforce providers were before their URL token. It
// runs after the migrations, since secrets are encrypted with the
// application's key, and returns the providers as "tenant/name (kind)".
func issueMissingSecrets(ctx context.Context, s *postgres.Store) ([]string, error) {
	var kinds []string
	for _, name := range provider.Names() {
		if k, _ := provider.Lookup(name); k.HasSecrets() {
			kinds = append(kinds, name)
		}
	}
	issued, err := s.IssueMissingSecrets(ctx, kinds, provider.NewSecret)
	if err != nil {
		return nil, fmt.Errorf("issue secrets to providers without one: %w", err)
	}
	out := make([]string, len(issued))
	for i, p := range issued {
		out[i] = p.TenantSlug + "/" + p.Name + " (" + p.Kind + ")"
	}
	return out, nil
}

// issuedSecretsNotice tells the operator what issueMissingSecrets did to
// the providers it lists.
func issuedSecretsNotice(issued []string) string {
	return fmt.Sprintf("issued a secret to %d provider(s) connected before their kind required one (Salesforce deliveries now need a token in the URL): "+
		"until their owners paste the new webhook URL, shown on each provider's console page, into the sending system "+
		"(for Salesforce, every outbound message's Endpoint URL), their deliveries are refused with 401", len(issued))
}

// publicURLFlag registers --public-url, the base of the webhook URLs a
// command prints.
func (e cliEnv) publicURLFlag(fs *flag.FlagSet) *string {
	return fs.String("public-url", e.getenv("TIDEMARK_PUBLIC_URL"),
		"base URL providers call, for the webhook URL printed (default: TIDEMARK_PUBLIC_URL, else "+defaultPublicURL+")")
}

// defaultPublicURL is where `tidemark serve` listens by default.
const defaultPublicURL = "http://127.0.0.1:8080"

// webhookURL is the URL a provider delivers to, under base.
func webhookURL(base, tenant, name string) string {
	if base == "" {
		base = defaultPublicURL
	}
	return strings.TrimRight(base, "/") + "/webhooks/" + tenant + "/" + name
}

// printSecret prints a provider's new secret as the last line, or, for a
// kind whose secret only travels inside the URL, the URL with it.
func (e cliEnv) printSecret(k provider.Kind, base, tenant, name, secret string, config map[string]string) {
	page := k.SecretPage(webhookURL(base, tenant, name), secret, config)
	if page.CopyURL {
		fmt.Fprintf(e.stdout, "webhook URL with its %s, to paste into the provider (shown once):\n%s\n", page.SecretName, page.EndpointURL)
		return
	}
	fmt.Fprintf(e.stdout, "signing secret or token (shown once):\n%s\n", secret)
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
	fs := e.flags("provider create", "provider create --tenant SLUG --name NAME --kind KIND [--secret SECRET] [--public-url URL] [kind flags]\n\n"+
		"Connect a webhook provider to a tenant. Prints its signing secret or token as the last line\n"+
		"(salesforce: the webhook URL to paste into Salesforce, ending in ?token=<token>).")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "provider name, unique within the tenant (required)")
	kind := fs.String("kind", "", "provider kind: standard, hubspot, shippo or salesforce (required)")
	secret := fs.String("secret", "", `standard: "whsec_" + base64; hubspot: the app's client secret; shippo: the HMAC secret or URL token (default: generated); salesforce: none, its URL token is generated`)
	publicURL := e.publicURLFlag(fs)
	maxBody := fs.String("max-body", "", maxBodyUsage)
	settings := kindFlags(fs)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" || *kind == "" {
		fs.Usage()
		return fmt.Errorf("provider create: --tenant, --name and --kind are required")
	}
	limits, err := limitFlags(*maxBody, "")
	if err != nil {
		return err
	}
	k, err := provider.Get(*kind)
	if err != nil {
		return err
	}
	finalSecret, config, err := k.Setup(*secret, settings())
	if err != nil {
		return err
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		p, err := s.ConnectProvider(ctx, t.ID, *name, *kind, finalSecret, config)
		if err != nil {
			return err
		}
		if limits != (domain.ProviderLimits{}) {
			if _, err := s.SetProviderLimits(ctx, t.ID, p.ID, limits); err != nil {
				return err
			}
		}
		fmt.Fprintf(e.stdout, "created %s provider %s for tenant %s\nwebhook URL path: /webhooks/%s/%s\n", *kind, *name, *tenant, *tenant, *name)
		if finalSecret == "" {
			fmt.Fprintf(e.stdout, "this kind signs nothing; deliveries are checked against its settings\n/webhooks/%s/%s\n", *tenant, *name)
			return nil
		}
		e.printSecret(k, *publicURL, *tenant, *name, finalSecret, config)
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
	fs := e.flags("provider rotate", "provider rotate --tenant SLUG --name NAME [--secret SECRET] [--public-url URL]\n\n"+
		"Add a new signing secret (a salesforce provider: a new URL token). The previous one keeps working\n"+
		"until the next rotation or `provider retire`, so senders can switch without dropping deliveries.\n"+
		"Prints the new secret as the last line (salesforce: the webhook URL with the new token).")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "provider name (required)")
	secret := fs.String("secret", "", "new signing secret (default: generated; salesforce tokens are always generated)")
	publicURL := e.publicURLFlag(fs)
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
		k, err := provider.Get(p.Kind)
		if err != nil {
			return err
		}
		if *secret == "" {
			*secret, err = k.NewSecret(p.Config)
		} else {
			_, _, err = k.Setup(*secret, p.Config)
		}
		if err != nil {
			return err
		}
		if err := s.RotateProviderSecret(ctx, t.ID, p.ID, *secret); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "rotated the secret of %s/%s; the previous one stays active until the next rotation or `tidemark provider retire`\n",
			*tenant, *name)
		e.printSecret(k, *publicURL, *tenant, *name, *secret, p.Config)
		return nil
	})
}

func (e cliEnv) providerRetire(ctx context.Context, args []string) error {
	fs := e.flags("provider retire", "provider retire --tenant SLUG --name NAME\n\n"+
		"End a rotation: retire every secret of the provider but the newest, so only it is accepted.\n"+
		"Prints how many were retired.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "provider name (required)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider retire: --tenant and --name are required")
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		p, err := s.ProviderSummary(ctx, t.ID, *name)
		if err != nil {
			return err
		}
		n, err := s.RetireProviderSecrets(ctx, t.ID, p.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "retired %d secret(s) of %s/%s; only the newest is accepted now\n", n, *tenant, *name)
		return nil
	})
}

const (
	maxBodyUsage = `largest delivery body accepted: bytes or a size such as 512KiB or 5MiB, at most 64MiB; ` +
		`"default" for the kind's (1MiB; salesforce 5MiB)`
	maxFutureSkewUsage = "how far ahead of the database's clock a timestamp revision may be, such as 5m " +
		"(whole seconds, at most 24h)"
)

// limitFlags reads --max-body and --max-future-skew ("" when not given)
// into the limits they set.
func limitFlags(maxBody, maxFutureSkew string) (domain.ProviderLimits, error) {
	var l domain.ProviderLimits
	if maxBody != "" {
		var n int64 // "default": the kind's
		if maxBody != "default" {
			var err error
			if n, err = domain.ParseByteSize(maxBody); err == nil {
				err = domain.ValidateMaxBody(n)
			}
			if err != nil {
				return l, fmt.Errorf(`--max-body %q: give more than 0 and at most %s, in bytes (1048576) or with a unit `+
					`(512KiB, 5MiB), or "default" for the kind's`, maxBody, domain.FormatByteSize(domain.MaxBodyCeiling))
			}
		}
		l.MaxBody = &n
	}
	if maxFutureSkew != "" {
		d, err := time.ParseDuration(maxFutureSkew)
		if err == nil {
			err = domain.ValidateMaxFutureSkew(d)
		}
		if err != nil {
			return l, fmt.Errorf("--max-future-skew %q: give whole seconds from 0s to %s, such as 5m or 90s",
				maxFutureSkew, domain.MaxFutureSkewCeiling)
		}
		l.MaxFutureSkew = &d
	}
	return l, nil
}

func (e cliEnv) providerUpdate(ctx context.Context, args []string) error {
	fs := e.flags("provider update", "provider update --tenant SLUG --provider NAME [--max-body SIZE] [--max-future-skew DURATION]\n\n"+
		"Change a provider's limits, then print them.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("provider", "", "provider name (required)")
	maxBody := fs.String("max-body", "", maxBodyUsage)
	maxFutureSkew := fs.String("max-future-skew", "", maxFutureSkewUsage)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider update: --tenant and --provider are required")
	}
	if *maxBody == "" && *maxFutureSkew == "" {
		fs.Usage()
		return fmt.Errorf("provider update: nothing to change; give --max-body, --max-future-skew or both")
	}
	limits, err := limitFlags(*maxBody, *maxFutureSkew)
	if err != nil {
		return err
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		p, err := s.ProviderSummary(ctx, t.ID, *name)
		if err != nil {
			return err
		}
		updated, err := s.SetProviderLimits(ctx, t.ID, p.ID, limits)
		if err != nil {
			return err
		}
		body := provider.MaxBody(updated)
		note := ""
		if updated.MaxBody == 0 {
			note = ", the kind's default"
		}
		fmt.Fprintf(e.stdout, "updated the limits of %s/%s\nmax body: %s (%d bytes%s)\nmax future skew: %s\n",
			*tenant, *name, domain.FormatByteSize(body), body, note, updated.MaxFutureSkew)
		return nil
	})
}

func (e cliEnv) tokenCreate(ctx context.Context, args []string) error {
	fs := e.flags("token create", "token create --tenant SLUG [--name NAME] [--access read|write] [--expires 90d]\n\n"+
		"Create an API token for one tenant. Prints it as the last line; it is not stored and cannot be shown again.")
	tenant := fs.String("tenant", "", "tenant slug (required)")
	name := fs.String("name", "", "a name to recognise the token by")
	access := fs.String("access", string(domain.TokenWrite), "read: reads only; write: also resolves conflicts")
	expires := fs.String("expires", "never", "when it stops working: whole days or hours from now, such as 90d or 12h, or never")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("token create: --tenant is required")
	}
	tokenAccess, err := domain.ParseTokenAccess(*access)
	if err != nil {
		return fmt.Errorf("--access: %s", domain.ErrorMessage(err))
	}
	lifetime, err := domain.ParseTokenLifetime(*expires)
	if err != nil {
		return fmt.Errorf("--expires: %s", domain.ErrorMessage(err))
	}
	if *name == "" {
		*name = "token created " + time.Now().UTC().Format(time.DateTime)
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		token, err := s.CreateAPIToken(ctx, t.ID, domain.NewAPIToken{Name: *name, Access: tokenAccess, Lifetime: lifetime})
		if err != nil {
			return err
		}
		expiry := "never expires"
		if lifetime > 0 {
			expiry = "expires " + time.Now().Add(lifetime).UTC().Format("2006-01-02 15:04 UTC")
		}
		fmt.Fprintf(e.stdout, "%s API token for tenant %s, %s (shown once):\n%s\n", tokenAccess.Label(), *tenant, expiry, token)
		return nil
	})
}

func (e cliEnv) userCreate(ctx context.Context, args []string) error {
	fs := e.flags("user create", "user create --email EMAIL --password-stdin [--admin] [--tenant SLUG [--role viewer|operator|owner]]\n\n"+
		"Create a console operator. The password is read from the first line of standard input.")
	email := fs.String("email", "", "login email (required)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input (required)")
	admin := fs.Bool("admin", false, "the operator sees every tenant, as an owner")
	tenant := fs.String("tenant", "", "make the operator a member of this tenant")
	role := fs.String("role", string(domain.RoleOperator), "their role in --tenant: viewer (reads), operator (also resolves conflicts) "+
		"or owner (also providers, secrets, scopes, API tokens and members)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" || !*fromStdin {
		fs.Usage()
		return fmt.Errorf("user create: --email and --password-stdin are required")
	}
	memberRole, err := domain.ParseRole(*role)
	if err != nil {
		return fmt.Errorf("--role: %s", domain.ErrorMessage(err))
	}
	if *tenant == "" && flagSet(fs, "role") {
		return fmt.Errorf("user create: --role is the role in --tenant; give --tenant too")
	}
	password, err := e.passwordFromStdin("user create")
	if err != nil {
		return err
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := s.CreateUser(ctx, *email, password, *admin, *tenant, memberRole); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created operator %s\n", strings.ToLower(*email))
		return nil
	})
}

// passwordFromStdin reads a password from the first line of standard input.
func (e cliEnv) passwordFromStdin(cmd string) (string, error) {
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" && err != nil {
		return "", fmt.Errorf("%s: no password on standard input: %w", cmd, err)
	}
	if password == "" {
		return "", fmt.Errorf("%s: the first line of standard input is empty; it must hold the password", cmd)
	}
	return password, nil
}

func (e cliEnv) userPassword(ctx context.Context, args []string) error {
	fs := e.flags("user password", "user password --email EMAIL --password-stdin\n\n"+
		"Set a console operator's password, read from the first line of standard input, and end\n"+
		"their sessions. The change is recorded in the audit log.")
	email := fs.String("email", "", "the operator's login email (required)")
	fromStdin := fs.Bool("password-stdin", false, "read the new password from standard input (required)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" || !*fromStdin {
		fs.Usage()
		return fmt.Errorf("user password: --email and --password-stdin are required")
	}
	password, err := e.passwordFromStdin("user password")
	if err != nil {
		return err
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := s.ResetPassword(ctx, *email, password); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "set a new password for operator %s; their sessions have ended\n", strings.ToLower(strings.TrimSpace(*email)))
		return nil
	})
}

// flagSet reports whether the command line gave flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (e cliEnv) cleanup(ctx context.Context, args []string) error {
	fs := e.flags("cleanup", "cleanup [--retention 720h] [--history-retention DURATION]\n\n"+
		"Run one maintenance pass, then exit: remove expired idempotency keys, event-log\n"+
		"partitions past retention, accepted revisions and resolved conflicts past the\n"+
		"history retention and audit entries older than 400 days, and prepare the partitions\n"+
		"of the next 30 days. A pass is skipped while another process runs one; steps that\n"+
		"wait on a long transaction are deferred to the next pass.")
	retention := fs.Duration("retention", defaultRetention, retentionUsage)
	historyRetention := historyRetentionFlag(fs)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		if err := checkRetention(ctx, s, *retention); err != nil {
			return err
		}
		if err := keepHistory(s, *historyRetention); err != nil {
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
