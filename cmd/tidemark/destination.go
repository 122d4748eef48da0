package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/destination"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/postgres"
)

// The destination commands manage where a tenant's changes are pushed
// (docs/contract/destinations.md). Only here may a destination point at a
// private address (--allow-private): the API and the console never allow it.

// destinationCreateOptions are destination create's flags.
type destinationCreateOptions struct {
	tenant, url, nats, subject, provider, objectType, types, format *string
	maxInFlight                                                     *int
	allowPrivate                                                    *bool
}

// destinationCreateFlags declares destination create's flags.
func destinationCreateFlags(fs *flag.FlagSet) destinationCreateOptions {
	return destinationCreateOptions{
		tenant:     fs.String("tenant", "", "tenant slug (required)"),
		url:        fs.String("url", "", "the http(s) URL each change is POSTed to, signed with Standard Webhooks"),
		nats:       fs.String("nats", "", "instead of --url: the NATS JetStream server each change is published to"),
		subject:    fs.String("subject", "", "with --nats: the subject prefix; changes go to PREFIX.{tenant}.{provider}.{object_type}"),
		provider:   fs.String("provider", "", "only the changes of this provider (default: every provider)"),
		objectType: fs.String("object-type", "", "only the changes of this object type, such as contact (default: every type)"),
		types: fs.String("types", "", "comma-separated change types: record.applied, record.deleted, record.reset, record.erased or record.*, "+
			"and alert types: alert.fired, alert.resolved or alert.* (default record.*; alert.* with --format slack)"),
		format:      fs.String("format", "", "the body of alert messages: standard, or slack ({\"text\"} for a Slack-compatible incoming webhook; alert types only) (default standard)"),
		maxInFlight: fs.Int("max-in-flight", 0, fmt.Sprintf("changes in flight at once, on different records, 1 to %d (default %d)", stream.MaxMaxInFlight, stream.DefaultMaxInFlight)),
		allowPrivate: fs.Bool("allow-private", false,
			"allow a loopback, private or link-local address (a consumer inside your own network); the API and the console never do"),
	}
}

func (e cliEnv) destinationCreate(ctx context.Context, args []string) error {
	fs := e.flags("destination create")
	o := destinationCreateFlags(fs)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *o.tenant == "" || (*o.url == "" && *o.nats == "") {
		fs.Usage()
		return fmt.Errorf("destination create: --tenant is required, and --url, or --nats with --subject")
	}
	nd := stream.NewDestination{URL: *o.url, NATSURL: *o.nats, Subject: *o.subject, Provider: *o.provider,
		ObjectType: *o.objectType, Format: *o.format, MaxInFlight: *o.maxInFlight, AllowPrivate: *o.allowPrivate}
	if *o.types != "" {
		nd.Types = strings.Split(*o.types, ",")
	}
	if flagSet(fs, "max-in-flight") && nd.MaxInFlight == 0 {
		return fmt.Errorf("--max-in-flight: give 1 to %d", stream.MaxMaxInFlight)
	}
	nd, err := destination.Check(ctx, nd)
	if errors.Is(err, egress.ErrPrivate) {
		return fmt.Errorf("%s; pass --allow-private if the consumer is inside your own network", domain.ErrorMessage(err))
	}
	if err != nil {
		return cliError(err)
	}
	return e.withTenant(ctx, *o.tenant, func(s *postgres.Store, t domain.Tenant) error {
		d, secret, err := s.CreateDestination(ctx, t.ID, nd)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "destination %d: %s\nsigning secret (shown once):\n%s\n", d.ID, d.RedactedTarget(), secret)
		return nil
	})
}

// cliError is err, its message alone when it is the user's to fix.
func cliError(err error) error {
	if domain.ErrorCode(err) == domain.EINVALID {
		return fmt.Errorf("%s", domain.ErrorMessage(err))
	}
	return err
}

// destinationListFlags declares destination list's flags.
func destinationListFlags(fs *flag.FlagSet) (tenant *string) {
	return fs.String("tenant", "", "tenant slug (required)")
}

func (e cliEnv) destinationList(ctx context.Context, args []string) error {
	fs := e.flags("destination list")
	tenant := destinationListFlags(fs)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("destination list: --tenant is required")
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error {
		ds, err := s.Destinations(ctx, t.ID)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATUS\tTARGET\tFILTERS\tPENDING\tLAG")
		for _, d := range ds {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\n", d.ID, destinationStatus(d), d.RedactedTarget(), destinationFilters(d),
				d.Pending, destinationLag(d, time.Now()))
		}
		return w.Flush()
	})
}

// destinationStatus is the status, with why it is failing.
func destinationStatus(d stream.Destination) string {
	if d.StatusReason != "" {
		return d.Status + " (" + d.StatusReason + ")"
	}
	return d.Status
}

// destinationFilters says which changes the destination selects.
func destinationFilters(d stream.Destination) string {
	parts := []string{"types=" + strings.Join(d.Types, ",")}
	if d.Format != "" && d.Format != stream.FormatStandard {
		parts = append(parts, "format="+d.Format)
	}
	if d.Provider != "" {
		parts = append(parts, "provider="+d.Provider)
	}
	if d.ObjectType != "" {
		parts = append(parts, "object-type="+d.ObjectType)
	}
	return strings.Join(parts, " ")
}

// destinationLag is how long the oldest undelivered change has waited, "-"
// when none waits.
func destinationLag(d stream.Destination, now time.Time) string {
	if d.Oldest == nil {
		return "-"
	}
	return max(now.Sub(*d.Oldest), 0).Truncate(time.Second).String()
}

// destinationIDFlags declares the flags of the commands on one destination.
func destinationIDFlags(fs *flag.FlagSet) (tenant *string, id *int64) {
	return fs.String("tenant", "", "tenant slug (required)"), fs.Int64("id", 0, "destination id, as destination list shows it (required)")
}

// destinationRewindFlags declares destination rewind's flags.
func destinationRewindFlags(fs *flag.FlagSet) (tenant *string, id *int64, after *string) {
	tenant, id = destinationIDFlags(fs)
	return tenant, id, fs.String("after", "", `a cursor of the change feed: every change after it is sent again; "" for the oldest kept (required)`)
}

// onDestination parses the flags declared on fs, which name a destination
// (tenant, id) and, for rewind, after, and runs fn on it. given reports
// whether the command's other required flags were given; need names them
// all.
func (e cliEnv) onDestination(ctx context.Context, fs *flag.FlagSet, args []string, tenant *string, id *int64,
	need string, given func() bool, fn func(s *postgres.Store, tenantID int64) error) error {
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || !flagSet(fs, "id") || !given() {
		fs.Usage()
		return fmt.Errorf("%s: %s required", fs.Name(), need)
	}
	if *id < 1 {
		return fmt.Errorf("--id: give a destination id, as destination list shows it")
	}
	return e.withTenant(ctx, *tenant, func(s *postgres.Store, t domain.Tenant) error { return cliError(fn(s, t.ID)) })
}

// destinationAction is a command that changes one destination and says so.
func destinationAction(name string, change func(*postgres.Store, context.Context, int64, int64) error,
	done string) func(cliEnv, context.Context, []string) error {
	return func(e cliEnv, ctx context.Context, args []string) error {
		fs := e.flags(name)
		tenant, id := destinationIDFlags(fs)
		return e.onDestination(ctx, fs, args, tenant, id, "--tenant and --id are", func() bool { return true },
			func(s *postgres.Store, tenantID int64) error {
				if err := change(s, ctx, tenantID, *id); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "destination %d %s\n", *id, done)
				return nil
			})
	}
}

func (e cliEnv) destinationRotate(ctx context.Context, args []string) error {
	fs := e.flags("destination rotate")
	tenant, id := destinationIDFlags(fs)
	return e.onDestination(ctx, fs, args, tenant, id, "--tenant and --id are", func() bool { return true },
		func(s *postgres.Store, tenantID int64) error {
			secret, err := s.RotateDestinationSecret(ctx, tenantID, *id)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rotated the signing secret of destination %d; messages carry a signature with the previous one too for %s\n"+
				"signing secret (shown once):\n%s\n", *id, shortDuration(stream.DestinationSecretGrace), secret)
			return nil
		})
}

func (e cliEnv) destinationRewind(ctx context.Context, args []string) error {
	fs := e.flags("destination rewind")
	tenant, id, after := destinationRewindFlags(fs)
	return e.onDestination(ctx, fs, args, tenant, id, "--tenant, --id and --after are", func() bool { return flagSet(fs, "after") },
		func(s *postgres.Store, tenantID int64) error {
			position, err := stream.ParseCursor(*after)
			if err != nil {
				return err
			}
			if err := s.RewindDestination(ctx, tenantID, *id, position); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "destination %d is rewound: every change it selects after %s is sent again\n", *id, stream.FormatCursor(position))
			return nil
		})
}
