package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
)

// The alert commands set a tenant's alert rules and show them with the
// alerts firing now (docs/alerts.md).

// alertSetOptions are alert set's flags.
type alertSetOptions struct {
	tenant, rule, window *string
	threshold            *int64
	disable, enable      *bool
}

// alertSetFlags declares alert set's flags.
func alertSetFlags(fs *flag.FlagSet) alertSetOptions {
	return alertSetOptions{
		tenant:    fs.String("tenant", "", "tenant slug (required)"),
		rule:      fs.String("rule", "", alerting.RuleList("or")+" (required)"),
		threshold: fs.Int64("threshold", 0, "the rule's threshold, 1 or more (default: unchanged)"),
		window:    fs.String("window", "", "the rule's window, such as 90s, 5m or 6h, from 1m to 720h (default: unchanged)"),
		disable:   fs.Bool("disable", false, "stop evaluating the rule in this tenant"),
		enable:    fs.Bool("enable", false, "evaluate the rule again"),
	}
}

func (e cliEnv) alertSet(ctx context.Context, args []string) error {
	fs := e.flags("alert set")
	o := alertSetFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *o.tenant == "" || *o.rule == "" {
		fs.Usage()
		return fmt.Errorf("alert set: --tenant and --rule are required")
	}
	if *o.disable && *o.enable {
		return fmt.Errorf("alert set: give --disable or --enable, not both")
	}
	rule := alerting.Rule(*o.rule)
	if !alerting.Known(rule) {
		return fmt.Errorf("--rule: %s", domain.ErrorMessage(alerting.Check(alerting.Config{Rule: rule})))
	}
	return e.withTenant(ctx, *o.tenant, func(s cliStore, t domain.Tenant) error {
		c, err := alertRule(ctx, s, t.ID, rule)
		if err != nil {
			return err
		}
		if flagSet(fs, "threshold") {
			c.Threshold = *o.threshold
		}
		if flagSet(fs, "window") {
			if c.Window, err = alerting.ParseWindow(*o.window); err != nil {
				return cliError(err)
			}
		}
		if *o.disable || *o.enable {
			c.Enabled = *o.enable
		}
		if c, err = s.SetAlertRule(ctx, t.ID, c); err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "alert rule %s in %s: %s\n", c.Rule, t.Slug, alerting.Describe(c))
		return nil
	})
}

// alertRule is a rule's setting in a tenant.
func alertRule(ctx context.Context, s cliStore, tenantID int64, rule alerting.Rule) (alerting.Config, error) {
	rules, err := s.AlertRules(ctx, tenantID)
	if err != nil {
		return alerting.Config{}, err
	}
	for _, c := range rules {
		if c.Rule == rule {
			return c, nil
		}
	}
	return alerting.Default(rule), nil
}

// alertListFlags declares alert list's flags.
func alertListFlags(fs *flag.FlagSet) (tenant *string) {
	return fs.String("tenant", "", "tenant slug (required)")
}

func (e cliEnv) alertList(ctx context.Context, args []string) error {
	fs := e.flags("alert list")
	tenant := alertListFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("alert list: --tenant is required")
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
		rules, err := s.AlertRules(ctx, t.ID)
		if err != nil {
			return err
		}
		firing, err := s.FiringAlerts(ctx, t.ID)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "RULE\tENABLED\tTHRESHOLD\tWINDOW")
		for _, c := range rules {
			enabled := "yes"
			if !c.Enabled {
				enabled = "no"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", c.Rule, enabled, c.Threshold, c.Window)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if len(firing) == 0 {
			fmt.Fprintln(e.stdout, "\nno alert is firing")
			return nil
		}
		fmt.Fprintf(e.stdout, "\n%d firing:\n", len(firing))
		w = tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSINCE\tRULE\tSUMMARY")
		for _, a := range firing {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", a.ID, a.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), a.Rule, a.Summary)
		}
		return w.Flush()
	})
}
