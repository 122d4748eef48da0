// Package ssocmd is the tidemark sso commands: they set single sign-on up
// (docs/contract/console.md#single-sign-on), the identity provider, the
// rules from its groups to tenants' roles and the admin flag, and
// break-glass admins.
package ssocmd

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/sso"
	"github.com/tidemark/tidemark/postgres"
)

// Env is what the commands use of the tidemark command's environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Getenv func(string) string
	// Flags is the FlagSet of the command named.
	Flags func(name string) *flag.FlagSet
	// WithStore runs fn on the database's store.
	WithStore func(ctx context.Context, fn func(identity.SSOService) error) error
}

// defaultPublicURL is serve's address without --public-url.
const defaultPublicURL = "http://127.0.0.1:8080"

// setOptions are sso set's flags.
type setOptions struct {
	issuer, clientID, name, groupsClaim, domains, password, public *string
	sessionLength                                                  *time.Duration
	secretStdin, allowPrivate, newKey                              *bool
}

// SetFlags declares sso set's flags.
func SetFlags(fs *flag.FlagSet, getenv func(string) string) setOptions {
	return setOptions{
		issuer:      fs.String("issuer", "", "the identity provider's issuer URL, where /.well-known/openid-configuration is (required)"),
		clientID:    fs.String("client-id", "", "the console's client id at the provider (required)"),
		secretStdin: fs.Bool("client-secret-stdin", false, "read the client secret from the first line of standard input (required); stored encrypted, never printed"),
		name:        fs.String("name", "", `the provider's name on the sign-in button, "Sign in with NAME" (default: the issuer's host)`),
		groupsClaim: fs.String("groups-claim", identity.DefaultGroupsClaim, "the ID token claim that lists the person's groups"),
		domains:     fs.String("allowed-domains", "", "email domains that may sign in, comma-separated (default: any)"),
		password: fs.String("password-sign-in", identity.PasswordSignInAll, "who may still sign in with a password: all, "+
			"admins (break-glass admins only: tidemark sso break-glass) or off"),
		sessionLength: fs.Duration("session-length", identity.DefaultSSOSessionLength,
			"how long an SSO session lasts before the console asks the provider again (1m to 24h)"),
		allowPrivate: fs.Bool("allow-private", false, "allow an http issuer at a loopback or private address (a test provider)"),
		public: fs.String("public-url", getenv("TIDEMARK_PUBLIC_URL"),
			"the console's base URL, for the redirect URI printed (default: TIDEMARK_PUBLIC_URL, else "+defaultPublicURL+")"),
		newKey: fs.Bool("new-key", false, cli.NewKeyUsage),
	}
}

// Set is sso set.
func Set(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("sso set")
	o := SetFlags(fs, e.Getenv)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *o.issuer == "" || *o.clientID == "" || !*o.secretStdin {
		fs.Usage()
		return fmt.Errorf("sso set: --issuer, --client-id and --client-secret-stdin are required")
	}
	secret, err := cli.SecretLine(bufio.NewReader(e.Stdin), "client secret")
	if err != nil {
		return err
	}
	n, err := identity.NewSSOConfig{ClientSecret: secret, SSOConfig: identity.SSOConfig{Issuer: *o.issuer, ClientID: *o.clientID,
		Name: *o.name, GroupsClaim: *o.groupsClaim, AllowedDomains: strings.Split(*o.domains, ","),
		PasswordSignIn: *o.password, SessionLength: *o.sessionLength, AllowPrivate: *o.allowPrivate}}.Check()
	if err != nil {
		return err
	}
	if err := sso.Discover(ctx, n.Issuer, n.AllowPrivate); err != nil {
		return err
	}
	if *o.newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		if err := s.SetSSO(ctx, n); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "single sign-on is on: \"Sign in with %s\" (issuer %s, client id %s)\n", n.Name, n.Issuer, n.ClientID)
		fmt.Fprintf(e.Stdout, "password sign-in: %s; session length: %s\n", n.PasswordSignIn, n.SessionLength)
		fmt.Fprintf(e.Stdout, "redirect URI to register at the provider:\n%s/login/sso/callback\n", publicBase(*o.public))
		return nil
	})
}

// publicBase is the console's base URL: base, or the default.
func publicBase(base string) string {
	if base == "" {
		base = defaultPublicURL
	}
	return strings.TrimRight(base, "/")
}

// Show is sso show.
func Show(ctx context.Context, e Env, args []string) error {
	if _, err := cli.Parse(e.Flags("sso show"), args, 0); err != nil {
		return err
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		c, err := s.SSOConfig(ctx)
		if err != nil {
			return err
		}
		rules, err := s.SSORules(ctx)
		if err != nil {
			return err
		}
		state := "on"
		if !c.Enabled {
			state = "off (tidemark sso set turns it on again)"
		}
		domains := "any"
		if len(c.AllowedDomains) > 0 {
			domains = strings.Join(c.AllowedDomains, ",")
		}
		fmt.Fprintf(e.Stdout, "single sign-on: %s\nname: %s\nissuer: %s\nclient id: %s\ngroups claim: %s\nallowed domains: %s\n"+
			"password sign-in: %s\nsession length: %s\nupdated: %s\n", state, c.Name, c.Issuer, c.ClientID, c.GroupsClaim, domains,
			c.PasswordSignIn, c.SessionLength, c.UpdatedAt.UTC().Format(time.RFC3339))
		if len(rules) == 0 {
			fmt.Fprintln(e.Stdout, "rules: none (nobody can sign in by SSO: tidemark sso map)")
		}
		for _, r := range rules {
			fmt.Fprintf(e.Stdout, "rule: %s\n", r)
		}
		return nil
	})
}

// Disable is sso disable.
func Disable(ctx context.Context, e Env, args []string) error {
	if _, err := cli.Parse(e.Flags("sso disable"), args, 0); err != nil {
		return err
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		if err := s.DisableSSO(ctx); err != nil {
			return err
		}
		fmt.Fprintln(e.Stdout, "single sign-on is off; every operator signs in with a password")
		return nil
	})
}

// RuleFlags declares sso map's and unmap's flags; role nil for unmap.
func RuleFlags(fs *flag.FlagSet, withRole bool) (group, tenant, role *string, admin *bool) {
	group = fs.String("group", "", "the group's name as the groups claim lists it (required)")
	tenant = fs.String("tenant", "", "the tenant whose membership the group gives")
	if withRole {
		role = fs.String("role", "", "the role it gives there: viewer, operator or owner")
	}
	admin = fs.Bool("admin", false, "the group makes its members admins, instead of --tenant")
	return group, tenant, role, admin
}

// Map is sso map.
func Map(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("sso map")
	group, tenant, role, admin := RuleFlags(fs, true)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *group == "" || *admin == (*tenant != "" || *role != "") {
		fs.Usage()
		return fmt.Errorf("sso map: --group and either --tenant with --role or --admin are required")
	}
	rule, err := identity.SSORule{Group: *group, TenantSlug: *tenant, Role: domain.Role(*role), Admin: *admin}.Check()
	if err != nil {
		return err
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		rule, err := s.MapSSOGroup(ctx, rule)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "mapped %s; it applies at each operator's next sign-in\n", rule)
		return nil
	})
}

// Unmap is sso unmap.
func Unmap(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("sso unmap")
	group, tenant, _, admin := RuleFlags(fs, false)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *group == "" || *admin == (*tenant != "") {
		fs.Usage()
		return fmt.Errorf("sso unmap: --group and either --tenant or --admin are required")
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		if err := s.UnmapSSOGroup(ctx, identity.SSORule{Group: *group, TenantSlug: *tenant, Admin: *admin}); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "unmapped group %q; the access it gave ends at each operator's next sign-in\n", *group)
		return nil
	})
}

// BreakGlassFlags declares sso break-glass's flags.
func BreakGlassFlags(fs *flag.FlagSet) (email *string, off *bool) {
	return fs.String("email", "", "the admin's login email (required)"),
		fs.Bool("off", false, "no longer break-glass")
}

// BreakGlass is sso break-glass.
func BreakGlass(ctx context.Context, e Env, args []string) error {
	fs := e.Flags("sso break-glass")
	email, off := BreakGlassFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *email == "" {
		fs.Usage()
		return fmt.Errorf("sso break-glass: --email is required")
	}
	return e.WithStore(ctx, func(s identity.SSOService) error {
		if err := s.SetBreakGlass(ctx, *email, !*off); err != nil {
			return err
		}
		if *off {
			fmt.Fprintf(e.Stdout, "%s is no longer a break-glass admin\n", domain.NormalizeEmail(*email))
		} else {
			fmt.Fprintf(e.Stdout, "%s is a break-glass admin: they may sign in with a password when --password-sign-in is admins\n",
				domain.NormalizeEmail(*email))
		}
		return nil
	})
}
