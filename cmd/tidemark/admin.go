package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/cmd/tidemark/internal/providerlist"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
)

// withStore runs fn on a store opened from the environment.
func (e cliEnv) withStore(ctx context.Context, fn func(cliStore) error) error {
	db, err := e.openDatabase(ctx, openOptions{})
	if err != nil {
		return err
	}
	defer db.close()
	return fn(db.store)
}

// withTenant runs fn on a store opened from the environment and the tenant
// with that slug.
func (e cliEnv) withTenant(ctx context.Context, slug string, fn func(cliStore, domain.Tenant) error) error {
	return e.withStore(ctx, func(s cliStore) error {
		t, err := s.Tenant(ctx, slug)
		if err != nil {
			return err
		}
		return fn(s, t)
	})
}

func (e cliEnv) migrate(ctx context.Context, args []string) error {
	fs := e.flags("migrate")
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
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
func issueMissingSecrets(ctx context.Context, s cliStore) ([]string, error) {
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

// providerCreateOptions are provider create's flags.
type providerCreateOptions struct {
	tenant, name, kind, secret, publicURL, maxBody *string
	newKey                                         *bool
	settings                                       func() map[string]string // the kind flags given
}

// providerCreateFlags declares provider create's flags, the kinds' settings included.
func (e cliEnv) providerCreateFlags(fs *flag.FlagSet) providerCreateOptions {
	return providerCreateOptions{
		tenant:    fs.String("tenant", "", "tenant slug (required)"),
		name:      providerFlag(fs, "provider name, unique within the tenant (required)"),
		kind:      fs.String("kind", "", "provider kind: standard, hubspot, shippo or salesforce (required)"),
		secret:    fs.String("secret", "", `standard: "whsec_" + base64; hubspot: the app's client secret; shippo: the HMAC secret or URL token (default: generated); salesforce: none, its URL token is generated`),
		publicURL: e.publicURLFlag(fs),
		maxBody:   fs.String("max-body", "", maxBodyUsage),
		newKey:    fs.Bool("new-key", false, cli.NewKeyUsage),
		settings:  kindFlags(fs),
	}
}

func (e cliEnv) providerCreate(ctx context.Context, args []string) error {
	fs := e.flags("provider create")
	o := e.providerCreateFlags(fs)
	tenant, name, kind, secret, publicURL, maxBody, settings := o.tenant, o.name, o.kind, o.secret, o.publicURL, o.maxBody, o.settings
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" || *kind == "" {
		fs.Usage()
		return fmt.Errorf("provider create: --tenant, --provider and --kind are required")
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
	if *o.newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
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

// providerRotateFlags declares provider rotate's flags.
func (e cliEnv) providerRotateFlags(fs *flag.FlagSet) (tenant, name, secret, publicURL *string, newKey *bool) {
	return fs.String("tenant", "", "tenant slug (required)"),
		providerFlag(fs, "provider name (required)"),
		fs.String("secret", "", "new signing secret (default: generated; salesforce tokens are always generated)"),
		e.publicURLFlag(fs),
		fs.Bool("new-key", false, cli.NewKeyUsage)
}

func (e cliEnv) providerRotate(ctx context.Context, args []string) error {
	fs := e.flags("provider rotate")
	tenant, name, secret, publicURL, newKey := e.providerRotateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider rotate: --tenant and --provider are required")
	}
	if *newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
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

// providerRetireFlags declares provider retire's flags.
func providerRetireFlags(fs *flag.FlagSet) (tenant, name *string) {
	return fs.String("tenant", "", "tenant slug (required)"), providerFlag(fs, "provider name (required)")
}

// providerList is tidemark provider list (cmd/tidemark/internal/providerlist).
func (e cliEnv) providerList(ctx context.Context, args []string) error {
	return providerlist.Run(ctx, providerlist.Env{Stdout: e.stdout, Flags: e.flags,
		WithTenant: func(ctx context.Context, slug string, fn func(providerlist.Store, domain.Tenant) error) error {
			return e.withTenant(ctx, slug, func(s cliStore, t domain.Tenant) error { return fn(s, t) })
		}}, args)
}

// providerFlag declares --provider, naming the provider a command acts on,
// with --name, what provider create, rotate and retire called it first,
// as its alias.
func providerFlag(fs *flag.FlagSet, usage string) *string {
	p := fs.String("provider", "", usage)
	cli.Alias(fs, "name", "provider")
	return p
}

func (e cliEnv) providerRetire(ctx context.Context, args []string) error {
	fs := e.flags("provider retire")
	tenant, name := providerRetireFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider retire: --tenant and --provider are required")
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
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

// providerUpdateFlags declares provider update's flags.
func providerUpdateFlags(fs *flag.FlagSet) (tenant, name, maxBody, maxFutureSkew *string, api apiFlags, cdc cdcFlags) {
	return fs.String("tenant", "", "tenant slug (required)"),
		fs.String("provider", "", "provider name (required)"),
		fs.String("max-body", "", maxBodyUsage),
		fs.String("max-future-skew", "", maxFutureSkewUsage),
		apiCredentialFlags(fs), changeDataCaptureFlags(fs)
}

func (e cliEnv) providerUpdate(ctx context.Context, args []string) error {
	fs := e.flags("provider update")
	tenant, name, maxBody, maxFutureSkew, api, cdc := providerUpdateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *name == "" {
		fs.Usage()
		return fmt.Errorf("provider update: --tenant and --provider are required")
	}
	setLimits := *maxBody != "" || *maxFutureSkew != ""
	if !setLimits && !api.given() && !cdc.given() {
		fs.Usage()
		return fmt.Errorf("provider update: nothing to change; give --max-body, --max-future-skew, API credentials " +
			"(--api-token-stdin, or --client-id with --client-secret-stdin), --clear-api-credentials, --cdc or --no-cdc")
	}
	if err := cdc.check(); err != nil {
		return err
	}
	limits, err := limitFlags(*maxBody, *maxFutureSkew)
	if err != nil {
		return err
	}
	var creds pull.Credentials
	if api.given() {
		if creds, err = api.credentials(bufio.NewReader(e.stdin)); err != nil {
			return err
		}
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
		p, err := s.ProviderSummary(ctx, t.ID, *name)
		if err != nil {
			return err
		}
		if api.given() {
			if err := e.updateAPICredentials(ctx, s, t, p, api, creds); err != nil {
				return err
			}
		}
		if cdc.given() {
			if err := e.updateCDC(ctx, s, t, p, cdc, *api.allowPrivate); err != nil {
				return err
			}
		}
		if !setLimits {
			return nil
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

// tokenCreateOptions are token create's flags.
type tokenCreateOptions struct {
	tenant, name, access, expires, by *string
	admin                             *bool
}

// tokenCreateFlags declares token create's flags.
func tokenCreateFlags(fs *flag.FlagSet) tokenCreateOptions {
	return tokenCreateOptions{
		tenant:  fs.String("tenant", "", "tenant slug (required unless --admin)"),
		name:    fs.String("name", "", "a name to recognise the token by"),
		access:  fs.String("access", string(domain.TokenWrite), "read: reads only; write: also resolves conflicts (tenant tokens)"),
		expires: fs.String("expires", "never", "when it stops working: whole days or hours from now, such as 90d or 12h, or never"),
		admin: fs.Bool("admin", false, "an admin API token: no tenant, good only for /api/v1/admin/...; needs --by "+
			"(not with --tenant or --access)"),
		by: fs.String("by", "", "with --admin: the email of the enabled admin operator the token answers for; "+
			"it stops working when they are no longer one"),
	}
}

func (e cliEnv) tokenCreate(ctx context.Context, args []string) error {
	fs := e.flags("token create")
	o := tokenCreateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	switch {
	case *o.admin && (*o.tenant != "" || flagSet(fs, "access")):
		fs.Usage()
		return fmt.Errorf("token create: an admin token has no tenant and no access level; give --admin or --tenant, not both")
	case *o.admin && *o.by == "":
		fs.Usage()
		return fmt.Errorf("token create: --admin requires --by EMAIL, the admin operator the token answers for")
	case !*o.admin && *o.by != "":
		fs.Usage()
		return fmt.Errorf("token create: --by names the admin of an admin token; give it with --admin")
	case !*o.admin && *o.tenant == "":
		fs.Usage()
		return fmt.Errorf("token create: --tenant is required (or --admin with --by for an admin API token)")
	}
	lifetime, err := domain.ParseTokenLifetime(*o.expires)
	if err != nil {
		return fmt.Errorf("--expires: %s", domain.ErrorMessage(err))
	}
	if *o.name == "" {
		// Not "token ...": the audit log reads "created an API token NAME".
		*o.name = "cli " + time.Now().UTC().Format(time.DateTime)
	}
	expiry := "never expires"
	if lifetime > 0 {
		expiry = "expires " + time.Now().Add(lifetime).UTC().Format("2006-01-02 15:04 UTC")
	}
	if *o.admin {
		return e.adminTokenCreate(ctx, domain.NewAdminToken{Name: *o.name, Lifetime: lifetime, CreatorEmail: *o.by}, expiry)
	}
	tokenAccess, err := domain.ParseTokenAccess(*o.access)
	if err != nil {
		return fmt.Errorf("--access: %s", domain.ErrorMessage(err))
	}
	return e.withTenant(ctx, *o.tenant, func(s cliStore, t domain.Tenant) error {
		token, err := s.CreateAPIToken(ctx, t.ID, domain.NewAPIToken{Name: *o.name, Access: tokenAccess, Lifetime: lifetime})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s API token for tenant %s, %s (shown once):\n%s\n", tokenAccess.Label(), *o.tenant, expiry, token)
		return nil
	})
}

// flagSet reports whether the command line gave flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// cleanupFlags declares cleanup's flags.
func cleanupFlags(fs *flag.FlagSet) (retention, historyRetention *time.Duration) {
	return fs.Duration("retention", defaultRetention, retentionUsage), historyRetentionFlag(fs)
}

func (e cliEnv) cleanup(ctx context.Context, args []string) error {
	fs := e.flags("cleanup")
	retention, historyRetention := cleanupFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
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
func checkRetention(ctx context.Context, s cliStore, retention time.Duration) error {
	err := s.CheckRetention(ctx, retention)
	if domain.ErrorCode(err) == domain.EINVALID {
		return errors.New("--retention: " + domain.ErrorMessage(err))
	}
	return err
}
