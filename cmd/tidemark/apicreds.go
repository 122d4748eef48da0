package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/egress"
	pullapi "github.com/tidemark/tidemark/internal/pull"
	"github.com/tidemark/tidemark/postgres"
)

// apiFlags are provider update's flags that set or clear the provider's API
// credentials, from which backfill pulls what webhooks missed.
type apiFlags struct {
	fs                          *flag.FlagSet
	tokenStdin, secretStdin     *bool
	baseURL, clientID, loginURL *string
	apiVersion                  *string
	allowPrivate, newKey, clear *bool
	budget                      *float64
}

// apiCredentialFlags declares the API credentials' flags on fs.
func apiCredentialFlags(fs *flag.FlagSet) apiFlags {
	return apiFlags{fs: fs,
		tokenStdin: fs.Bool("api-token-stdin", false, "HubSpot: set the API credentials to a private app's access token, "+
			"read from the first line of standard input"),
		baseURL: fs.String("api-base-url", "", "HubSpot: call the API at this address instead of https://api.hubapi.com "+
			"(tests, sandboxes)"),
		clientID: fs.String("client-id", "", "Salesforce: the connected app's consumer key, for the OAuth 2.0 client "+
			"credentials flow (with --client-secret-stdin and --login-url)"),
		secretStdin: fs.Bool("client-secret-stdin", false, "Salesforce: read the connected app's consumer secret from "+
			"the first line of standard input"),
		loginURL:   fs.String("login-url", "", "Salesforce: the org's My Domain URL, such as https://MYDOMAIN.my.salesforce.com"),
		apiVersion: fs.String("api-version", "", "Salesforce: the REST API version (default "+pull.DefaultAPIVersion+")"),
		allowPrivate: fs.Bool("allow-private", false, "let --api-base-url, --login-url or --pubsub-url be a loopback or "+
			"private address (a test server, a sandbox in your own network)"),
		budget: fs.Float64("api-budget", pull.DefaultBudgetShare*100, "the most of the account's API budget, in "+
			"percent, that a backfill may use"),
		newKey: fs.Bool("new-key", false, cli.NewKeyUsage),
		clear:  fs.Bool("clear-api-credentials", false, "delete the provider's API credentials"),
	}
}

// given reports whether the command line sets or clears API credentials;
// --allow-private alone does not, as it also goes with --pubsub-url.
func (a apiFlags) given() bool {
	for _, name := range []string{"api-token-stdin", "api-base-url", "client-id", "client-secret-stdin", "login-url",
		"api-version", "api-budget", "new-key", "clear-api-credentials"} {
		if flagSet(a.fs, name) {
			return true
		}
	}
	return false
}

// credentials reads the credentials the flags set, their secret from
// stdin; it refuses flags that go together with nothing or contradict each
// other. The provider's kind is checked later, once it is known.
func (a apiFlags) credentials(stdin *bufio.Reader) (pull.Credentials, error) {
	const cmd = "provider update"
	if *a.clear {
		for _, name := range []string{"api-token-stdin", "api-base-url", "client-id", "client-secret-stdin", "login-url",
			"api-version", "allow-private", "api-budget", "new-key"} {
			if flagSet(a.fs, name) {
				return pull.Credentials{}, fmt.Errorf("%s: --clear-api-credentials takes no --%s", cmd, name)
			}
		}
		return pull.Credentials{}, nil
	}
	if *a.tokenStdin && *a.secretStdin {
		return pull.Credentials{}, fmt.Errorf("%s: give --api-token-stdin (HubSpot) or --client-secret-stdin (Salesforce), not both", cmd)
	}
	if !*a.tokenStdin && !*a.secretStdin {
		return pull.Credentials{}, fmt.Errorf("%s: API credentials need their secret from standard input: "+
			"--api-token-stdin (HubSpot) or --client-id with --client-secret-stdin (Salesforce)", cmd)
	}
	share, err := pull.ShareFromPercent(*a.budget)
	if err != nil {
		return pull.Credentials{}, fmt.Errorf("--api-budget: %s", domain.ErrorMessage(err))
	}
	c := pull.Credentials{ClientID: *a.clientID, LoginURL: *a.loginURL, APIVersion: *a.apiVersion, BaseURL: *a.baseURL,
		AllowPrivate: *a.allowPrivate, BudgetShare: share}
	what, flagName := pull.SecretClient, "--client-secret-stdin"
	if *a.tokenStdin {
		what, flagName = pull.SecretToken, "--api-token-stdin"
	}
	secret, err := cli.SecretLine(stdin, what)
	if err != nil {
		return c, fmt.Errorf("%s %s: %w", cmd, flagName, err)
	}
	if *a.tokenStdin {
		c.Token = secret
	} else {
		c.ClientSecret = secret
	}
	return c, nil
}

// updateAPICredentials sets or clears the API credentials of p, a provider
// of tenant t, as the flags say (c read by credentials), and says what it
// did without the secret.
func (e cliEnv) updateAPICredentials(ctx context.Context, s cliStore, t domain.Tenant, p domain.ProviderSummary,
	a apiFlags, c pull.Credentials) error {
	if *a.clear {
		if err := s.ClearAPICredentials(ctx, t.ID, p.ID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "cleared the API credentials of %s/%s\n", t.Slug, p.Name)
		return nil
	}
	c, err := pullapi.CheckCredentials(ctx, p.Kind, c)
	if errors.Is(err, egress.ErrPrivate) {
		return fmt.Errorf("%s; pass --allow-private if the API is a test server or inside your own network", refusal(err))
	}
	if err != nil {
		return fmt.Errorf("provider update: %s", refusal(err))
	}
	if *a.newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	if err := s.SetAPICredentials(ctx, t.ID, p.ID, c); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "set the API credentials of %s/%s: %s (the secret is stored encrypted and not shown again)\n",
		t.Slug, p.Name, c.Summary())
	return nil
}
