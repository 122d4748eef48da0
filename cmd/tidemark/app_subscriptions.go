package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot"
)

// app subscriptions shows and sets an app's Webhooks Journal
// subscriptions at HubSpot (docs/contract/apps.md#journal-subscriptions),
// with the app's client credentials token.

// appSubscriptionsFlags declares app subscriptions' flags.
func appSubscriptionsFlags(fs *flag.FlagSet) (app, set *string, dryRun *bool) {
	return fs.String("app", "", "app name (required)"),
		fs.String("set", "", "a JSON file (- for standard input) listing the subscriptions HubSpot should hold: "+
			"the missing ones are created, the others deleted"),
		fs.Bool("dry-run", false, "with --set: print what would change, change nothing")
}

func (e cliEnv) appSubscriptions(ctx context.Context, args []string) error {
	fs := e.flags("app subscriptions")
	appName, set, dryRun := appSubscriptionsFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *appName == "" {
		fs.Usage()
		return fmt.Errorf("app subscriptions: --app is required")
	}
	if *dryRun && *set == "" {
		return refusedAsGiven{domain.Errorf(domain.EINVALID, "app subscriptions: --dry-run goes with --set")}
	}
	var want []hubspot.SubscriptionRequest
	if *set != "" {
		data, err := e.readSetFile(*set)
		if err != nil {
			return err
		}
		if want, err = hubspot.ParseSubscriptions(data); err != nil {
			return refusedAsGiven{domain.Errorf(domain.EINVALID, "%s: %s", *set, domain.ErrorMessage(err))}
		}
	}
	return e.withStore(ctx, func(s cliStore) error {
		app, err := s.App(ctx, *appName)
		if err != nil {
			return cliError(err)
		}
		c, err := appAPIClient(ctx, s, app)
		if err != nil {
			return err
		}
		tokens := c.AppTokens(hubspot.SubscriptionScopes...)
		if *set == "" {
			have, err := c.Subscriptions(ctx, tokens)
			if err != nil {
				return fmt.Errorf("app %s: %w", app.Name, err)
			}
			return printSubscriptions(e.stdout, have)
		}
		if *dryRun {
			have, err := c.Subscriptions(ctx, tokens)
			if err != nil {
				return fmt.Errorf("app %s: %w", app.Name, err)
			}
			printPlan(e.stdout, hubspot.PlanSubscriptions(have, want), "would create", "would delete")
			return nil
		}
		done, setErr := c.SetSubscriptions(ctx, tokens, want)
		printPlan(e.stdout, done, "created", "deleted")
		if len(done.Create)+len(done.Delete) > 0 {
			if err := s.RecordAppSubscriptions(ctx, app.Name, planSummary(done)); err != nil {
				return err
			}
		}
		if setErr != nil {
			return fmt.Errorf("app %s: %w", app.Name, setErr)
		}
		return nil
	})
}

// readSetFile reads --set's file, standard input for -.
func (e cliEnv) readSetFile(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(e.stdin, 1<<20))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, refusedAsGiven{domain.Errorf(domain.EINVALID, "--set: %v", err)}
	}
	return data, nil
}

// appAPIClient is the API client of app, with its current client secret.
func appAPIClient(ctx context.Context, s cliStore, app domain.App) (*hubspot.Client, error) {
	secrets, err := s.AppSecrets(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("app %s has no client secret: rotate one in (tidemark app rotate)", app.Name)
	}
	return hubspot.NewClient(hubspot.AppConfig{BaseURL: app.APIBaseURL, ClientID: app.ClientID, ClientSecret: secrets[0],
		AllowPrivate: app.AllowPrivate}, nil)
}

// printSubscriptions prints one subscription a line after a header.
func printSubscriptions(out io.Writer, subs []hubspot.Subscription) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTYPE\tOBJECT TYPE\tACTIONS\tPROPERTIES\tPORTAL")
	for _, s := range subs {
		fmt.Fprintf(w, "%d\t%s\n", s.ID, subscriptionLine(s.SubscriptionType, s.ObjectTypeID, s.Actions, s.Properties, s.PortalID, "\t"))
	}
	return w.Flush()
}

// subscriptionLine is a subscription's fields after its id, separated by sep.
func subscriptionLine(typ, objectType string, actions, properties []string, portal int64, sep string) string {
	or := func(v, none string) string {
		if v == "" {
			return none
		}
		return v
	}
	p := "(every portal)"
	if portal != 0 {
		p = strconv.FormatInt(portal, 10)
	}
	return strings.Join([]string{typ, or(objectType, "-"), strings.Join(actions, ","), or(strings.Join(properties, ","), "(all)"), p}, sep)
}

// printPlan prints what was (or would be) created and deleted.
func printPlan(out io.Writer, p hubspot.SubscriptionPlan, created, deleted string) {
	for i, c := range p.Create {
		id := ""
		if i < len(p.Created) {
			id = fmt.Sprintf(" %d", p.Created[i].ID)
		}
		fmt.Fprintf(out, "%s%s: %s\n", created, id, subscriptionLine(c.SubscriptionType, c.ObjectTypeID, c.Actions, c.Properties, c.PortalID, " "))
	}
	for _, d := range p.Delete {
		fmt.Fprintf(out, "%s %d: %s\n", deleted, d.ID, subscriptionLine(d.SubscriptionType, d.ObjectTypeID, d.Actions, d.Properties, d.PortalID, " "))
	}
	fmt.Fprintf(out, "%d unchanged, %d %s, %d %s\n", len(p.Unchanged), len(p.Create), created, len(p.Delete), deleted)
}

// planSummary is the audit's summary of what changed.
func planSummary(p hubspot.SubscriptionPlan) string {
	var parts []string
	for i, c := range p.Create {
		parts = append(parts, fmt.Sprintf("+%d %s", p.Created[i].ID, subscriptionLine(c.SubscriptionType, c.ObjectTypeID, c.Actions, c.Properties, c.PortalID, " ")))
	}
	for _, d := range p.Delete {
		parts = append(parts, fmt.Sprintf("-%d %s", d.ID, subscriptionLine(d.SubscriptionType, d.ObjectTypeID, d.Actions, d.Properties, d.PortalID, " ")))
	}
	summary := fmt.Sprintf("journal subscriptions: %d created, %d deleted, %d unchanged: %s", len(p.Create), len(p.Delete),
		len(p.Unchanged), strings.Join(parts, "; "))
	if len(summary) > 2000 {
		summary = summary[:2000] + "…"
	}
	return summary
}
