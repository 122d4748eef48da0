package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
)

// The app commands manage apps, a provider's public app registered once
// for the whole service, and their installs (docs/contract/apps.md). Only
// here may an app's URLs be http or private addresses (--allow-private),
// for tests and sandboxes.

// appKindFlag is --kind of app create: its synopsis shows the app kinds,
// not the provider kinds every other --kind takes.
type appKindFlag struct{ kind string }

func (f *appKindFlag) String() string     { return f.kind }
func (f *appKindFlag) Set(v string) error { f.kind = v; return nil }
func (f *appKindFlag) Metavar() string    { return domain.AppKindHubSpot }

// appCreateOptions are app create's flags.
type appCreateOptions struct {
	kind                                                     *appKindFlag
	name, clientID, scopes, authorizeURL, apiBaseURL, public *string
	appID                                                    *int64
	secretStdin, allowPrivate, newKey                        *bool
}

// appCreateFlags declares app create's flags.
func (e cliEnv) appCreateFlags(fs *flag.FlagSet) appCreateOptions {
	o := appCreateOptions{kind: &appKindFlag{}}
	fs.Var(o.kind, "kind", "app kind: "+domain.AppKindHubSpot+" (required)")
	o.name = fs.String("name", "", "app name, unique, in its webhook URL: 1-63 characters of a-z, 0-9 and '-' (required)")
	o.appID = fs.Int64("app-id", 0, "the app's id at HubSpot (required)")
	o.clientID = fs.String("client-id", "", "the app's client id (required)")
	o.secretStdin = fs.Bool("client-secret-stdin", false, "read the app's client secret from the first line of standard input (required); "+
		"stored encrypted, never printed")
	o.scopes = fs.String("scopes", "", "the scopes an install asks for, separated by spaces or commas (default: none)")
	o.authorizeURL = fs.String("authorize-url", "", "HubSpot's authorize URL (default "+domain.DefaultHubSpotAuthorizeURL+"); for tests and sandboxes")
	o.apiBaseURL = fs.String("api-base-url", "", "HubSpot's API base URL (default "+domain.DefaultHubSpotAPIBaseURL+"); for tests and sandboxes")
	o.allowPrivate = fs.Bool("allow-private", false, "allow http and loopback, private or link-local addresses in the URLs (a test server); "+
		"the console never does")
	o.public = e.publicURLFlag(fs)
	o.newKey = fs.Bool("new-key", false, cli.NewKeyUsage)
	return o
}

func (e cliEnv) appCreate(ctx context.Context, args []string) error {
	fs := e.flags("app create")
	o := e.appCreateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if o.kind.kind == "" || *o.name == "" || *o.appID == 0 || *o.clientID == "" || !*o.secretStdin {
		fs.Usage()
		return fmt.Errorf("app create: --kind, --name, --app-id, --client-id and --client-secret-stdin are required")
	}
	secret, err := cli.SecretLine(bufio.NewReader(e.stdin), "client secret")
	if err != nil {
		return err
	}
	na, err := domain.NewApp{Kind: o.kind.kind, Name: *o.name, ProviderAppID: *o.appID, ClientID: *o.clientID, ClientSecret: secret,
		Scopes:       strings.FieldsFunc(*o.scopes, func(r rune) bool { return r == ' ' || r == ',' }),
		AuthorizeURL: *o.authorizeURL, APIBaseURL: *o.apiBaseURL, AllowPrivate: *o.allowPrivate}.Check()
	if err != nil {
		return cliError(err)
	}
	// HubSpot's own URLs are not looked up: only those given may point
	// anywhere else.
	for _, u := range []struct{ flag, what, raw string }{{"authorize-url", "authorize URL", na.AuthorizeURL},
		{"api-base-url", "API base URL", na.APIBaseURL}} {
		if !flagSet(fs, u.flag) {
			continue
		}
		if err := checkAppURL(ctx, u.what, u.raw, na.AllowPrivate); err != nil {
			return err
		}
	}
	if *o.newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	return e.withStore(ctx, func(s cliStore) error {
		app, err := s.CreateApp(ctx, na)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "created %s app %s (app id %d, client id %s)\nscopes: %s\nauthorize URL: %s\nAPI base URL: %s\n",
			app.Kind, app.Name, app.ProviderAppID, app.ClientID, appScopes(app), app.AuthorizeURL, app.APIBaseURL)
		fmt.Fprintf(e.stdout, "webhook URL, the app's target URL at HubSpot:\n%s\n", appWebhookURL(*o.public, app.Name))
		return nil
	})
}

// checkAppURL refuses a URL whose host is or resolves to a private address
// unless allowPrivate, as destination create does; EINVALID.
func checkAppURL(ctx context.Context, what, raw string, allowPrivate bool) error {
	_, err := egress.CheckURL(ctx, raw, allowPrivate)
	if err == nil {
		return nil
	}
	// The operator runs the service and its DNS: what the host resolved
	// to is theirs to see.
	msg := what + ": " + strings.TrimPrefix(err.Error(), "url: ")
	if d := egress.Detail(err); d != "" {
		msg += " (" + d + ")"
	}
	if errors.Is(err, egress.ErrPrivate) {
		msg += "; pass --allow-private for a test server inside your own network"
	}
	return refusedAsGiven{domain.Errorf(domain.EINVALID, "%s", msg)}
}

// appWebhookURL is the URL an app's provider delivers every installed
// portal's webhooks to, under base.
func appWebhookURL(base, name string) string {
	if base == "" {
		base = defaultPublicURL
	}
	return strings.TrimRight(base, "/") + domain.AppWebhookPath(name)
}

// appScopes are the app's scopes as its install asks for them.
func appScopes(a domain.App) string {
	if len(a.Scopes) == 0 {
		return "(none)"
	}
	return strings.Join(a.Scopes, " ")
}

// appRotateFlags declares app rotate's flags.
func appRotateFlags(fs *flag.FlagSet) (name *string, secretStdin, newKey *bool) {
	return fs.String("name", "", "app name (required)"),
		fs.Bool("client-secret-stdin", false, "read the new client secret from the first line of standard input (required)"),
		fs.Bool("new-key", false, cli.NewKeyUsage)
}

func (e cliEnv) appRotate(ctx context.Context, args []string) error {
	fs := e.flags("app rotate")
	name, secretStdin, newKey := appRotateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *name == "" || !*secretStdin {
		fs.Usage()
		return fmt.Errorf("app rotate: --name and --client-secret-stdin are required")
	}
	secret, err := cli.SecretLine(bufio.NewReader(e.stdin), "client secret")
	if err != nil {
		return err
	}
	if *newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	return e.withStore(ctx, func(s cliStore) error {
		app, err := s.RotateAppSecret(ctx, *name, secret)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "rotated the client secret of app %s; the previous one verifies for %s more\n",
			app.Name, domain.FormatDuration(domain.AppSecretGrace))
		return nil
	})
}

func (e cliEnv) appList(ctx context.Context, args []string) error {
	fs := e.flags("app list")
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		apps, err := s.Apps(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tKIND\tAPP ID\tCLIENT ID\tSCOPES\tCREATED\tROTATED")
		for _, a := range apps {
			rotated := "never"
			if !a.RotatedAt.IsZero() {
				rotated = a.RotatedAt.UTC().Format(timeLayout)
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", a.Name, a.Kind, a.ProviderAppID, a.ClientID, appScopes(a),
				a.CreatedAt.UTC().Format(timeLayout), rotated)
		}
		return w.Flush()
	})
}

// timeLayout is how the app commands print a time.
const timeLayout = "2006-01-02 15:04:05Z"

// appDeleteFlags declares app delete's flags.
func appDeleteFlags(fs *flag.FlagSet) (name *string, confirm *bool) {
	return fs.String("name", "", "app name (required)"),
		fs.Bool("confirm", false, "confirm the deletion, which removes every install of the app (required)")
}

func (e cliEnv) appDelete(ctx context.Context, args []string) error {
	fs := e.flags("app delete")
	name, confirm := appDeleteFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *name == "" || !*confirm {
		fs.Usage()
		return fmt.Errorf("app delete: --name and --confirm are required")
	}
	return e.withStore(ctx, func(s cliStore) error {
		if err := s.DeleteApp(ctx, *name); err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "deleted app %s with its secrets and installs\n", *name)
		return nil
	})
}

// appConnectFlags declares app connect's flags.
func appConnectFlags(fs *flag.FlagSet) (app, tenant, providerName *string, portalID *int64) {
	return fs.String("app", "", "app name (required)"),
		fs.String("tenant", "", "tenant slug (required)"),
		fs.String("provider", domain.DefaultAppProvider, "the tenant's provider the portal's events go to; created, of the app's kind, when missing"),
		fs.Int64("portal-id", 0, "the HubSpot portal (hub id) to map (required)")
}

func (e cliEnv) appConnect(ctx context.Context, args []string) error {
	fs := e.flags("app connect")
	appName, tenant, providerName, portalID := appConnectFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *appName == "" || *tenant == "" || *portalID == 0 {
		fs.Usage()
		return fmt.Errorf("app connect: --app, --tenant and --portal-id are required")
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
		app, err := s.App(ctx, *appName)
		if err != nil {
			return err
		}
		p, err := e.appProvider(ctx, s, t, app, *providerName)
		if err != nil {
			return cliError(err)
		}
		in, err := s.ConnectPortal(ctx, app.Name, *portalID, t.ID, p.ID)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "portal %d of app %s goes to tenant %s, provider %s (no tokens: webhooks only)\n",
			in.PortalID, in.AppName, in.TenantSlug, in.ProviderName)
		return nil
	})
}

// appProvider is tenant t's provider named name, created of the app's
// kind, as provider create would, when missing. Its own signing secret is
// not printed: the portal's webhooks come through the app's URL.
func (e cliEnv) appProvider(ctx context.Context, s cliStore, t domain.Tenant, app domain.App, name string) (domain.Provider, error) {
	p, err := s.ProviderSummary(ctx, t.ID, name)
	if err == nil {
		return p.Provider, nil
	}
	if domain.ErrorCode(err) != domain.ENOTFOUND {
		return domain.Provider{}, err
	}
	k, err := provider.Get(app.Kind)
	if err != nil {
		return domain.Provider{}, err
	}
	secret, config, err := k.Setup("", nil)
	if err != nil {
		return domain.Provider{}, err
	}
	created, err := s.ConnectProvider(ctx, t.ID, name, app.Kind, secret, config)
	if err != nil {
		return created, err
	}
	fmt.Fprintf(e.stdout, "created %s provider %s for tenant %s\n", app.Kind, name, t.Slug)
	return created, nil
}

// appDisconnectFlags declares app disconnect's flags.
func appDisconnectFlags(fs *flag.FlagSet) (app *string, portalID *int64) {
	return fs.String("app", "", "app name (required)"), fs.Int64("portal-id", 0, "the portal to disconnect (required)")
}

func (e cliEnv) appDisconnect(ctx context.Context, args []string) error {
	fs := e.flags("app disconnect")
	appName, portalID := appDisconnectFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *appName == "" || *portalID == 0 {
		fs.Usage()
		return fmt.Errorf("app disconnect: --app and --portal-id are required")
	}
	return e.withStore(ctx, func(s cliStore) error {
		in, err := s.DisconnectPortal(ctx, *appName, *portalID)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "portal %d of app %s disconnected from tenant %s; its provider and records are kept\n",
			in.PortalID, in.AppName, in.TenantSlug)
		return nil
	})
}

// appInstallsFlags declares app installs' flags.
func appInstallsFlags(fs *flag.FlagSet) (app *string) {
	return fs.String("app", "", "app name (required)")
}

func (e cliEnv) appInstalls(ctx context.Context, args []string) error {
	fs := e.flags("app installs")
	appName := appInstallsFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *appName == "" {
		fs.Usage()
		return fmt.Errorf("app installs: --app is required")
	}
	return e.withStore(ctx, func(s cliStore) error {
		installs, err := s.AppInstalls(ctx, *appName)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "PORTAL\tTENANT\tPROVIDER\tSTATUS\tTOKENS\tCREATED")
		for _, in := range installs {
			tokens := "no (webhooks only)"
			if in.HasTokens {
				tokens = "yes"
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", in.PortalID, in.TenantSlug, in.ProviderName, in.Status, tokens,
				in.CreatedAt.UTC().Format(timeLayout))
		}
		return w.Flush()
	})
}
