package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/sink"
	"github.com/tidemark/tidemark/postgres"
)

// The destination commands manage where a tenant's changes are pushed
// (docs/contract/destinations.md). Only here may a destination point at a
// private address (--allow-private): the API and the console never allow it.

// destinationCreateOptions are destination create's flags.
type destinationCreateOptions struct {
	tenant, url, nats, subject, provider, objectType, types, format *string
	filter, transform                                               *string
	natsCreds, natsNKey, natsTLSCA                                  *string
	maxInFlight                                                     *int
	allowPrivate, newKey                                            *bool
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
		filter:      fs.String("filter", "", filterUsage),
		transform:   fs.String("transform", "", transformUsage),
		maxInFlight: fs.Int("max-in-flight", 0, fmt.Sprintf("changes in flight at once, on different records, 1 to %d (default %d)", stream.MaxMaxInFlight, stream.DefaultMaxInFlight)),
		allowPrivate: fs.Bool("allow-private", false,
			"allow a loopback, private or link-local address (a consumer inside your own network), and with --nats a server without credentials; the API and the console never do"),
		natsCreds: fs.String("nats-creds", "", "with --nats: a NATS credentials file (user JWT and nkey seed) to connect with; stored encrypted"),
		natsNKey:  fs.String("nats-nkey", "", "with --nats: instead of --nats-creds, a file holding a user nkey seed (SU...) to connect with; stored encrypted"),
		natsTLSCA: fs.String("nats-tls-ca", "", "with --nats: a PEM file of the certificate authorities the server's TLS certificate is checked against (default: the system's)"),
		newKey:    fs.Bool("new-key", false, cli.NewKeyUsage),
	}
}

func (e cliEnv) destinationCreate(ctx context.Context, args []string) error {
	fs := e.flags("destination create")
	o := destinationCreateFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *o.tenant == "" || (*o.url == "" && *o.nats == "") {
		fs.Usage()
		return fmt.Errorf("destination create: --tenant is required, and --url, or --nats with --subject")
	}
	nd := stream.NewDestination{URL: *o.url, NATSURL: *o.nats, Subject: *o.subject, Provider: *o.provider,
		ObjectType: *o.objectType, Format: *o.format, Filter: *o.filter, Transform: *o.transform, MaxInFlight: *o.maxInFlight, AllowPrivate: *o.allowPrivate}
	if *o.types != "" {
		nd.Types = strings.Split(*o.types, ",")
	}
	if flagSet(fs, "max-in-flight") && nd.MaxInFlight == 0 {
		return fmt.Errorf("--max-in-flight: give 1 to %d", stream.MaxMaxInFlight)
	}
	var err error
	if nd.NATS, err = natsAuthFlags(o); err != nil {
		return err
	}
	if nd.NATSURL != "" && nd.NATS.Kind() == "" && !nd.AllowPrivate {
		return fmt.Errorf("--nats needs credentials for the server: --nats-creds FILE or --nats-nkey FILE " +
			"(the messages carry the workspace's records, so a server that admits anyone is refused), " +
			"or --allow-private for a server inside your own network")
	}
	if *o.newKey {
		ctx = postgres.AllowNewKey(ctx)
	}
	nd, err = sink.Check(ctx, nd)
	if errors.Is(err, egress.ErrPrivate) {
		return fmt.Errorf("%s; pass --allow-private if the consumer is inside your own network", refusal(err))
	}
	if egress.Detail(err) != "" {
		return fmt.Errorf("%s", refusal(err))
	}
	if err != nil {
		return cliError(err)
	}
	return e.withTenant(ctx, *o.tenant, func(s cliStore, t domain.Tenant) error {
		d, secret, err := s.CreateDestination(ctx, t.ID, nd)
		if err != nil {
			return cliError(err)
		}
		fmt.Fprintf(e.stdout, "destination %d: %s\nsigning secret (shown once):\n%s\n", d.ID, d.RedactedTarget(), secret)
		return nil
	})
}

// refusal is the message of a URL's refusal for the operator at the command
// line, with what the host resolved to or the resolver's error
// (egress.Detail), which the API and the console keep from a tenant: the
// operator runs the service and its DNS.
func refusal(err error) string {
	if d := egress.Detail(err); d != "" {
		return domain.ErrorMessage(err) + " (" + d + ")"
	}
	return domain.ErrorMessage(err)
}

// natsAuthFlags reads the files that --nats-creds, --nats-nkey and
// --nats-tls-ca name; what they hold is stored, so that every node can
// connect.
func natsAuthFlags(o destinationCreateOptions) (stream.NATSAuth, error) {
	var a stream.NATSAuth
	for _, f := range []struct {
		flag, path string
		to         *string
		max        int
	}{{"--nats-creds", *o.natsCreds, &a.Creds, stream.MaxNATSCredsBytes}, {"--nats-nkey", *o.natsNKey, &a.NKey, stream.MaxNATSNKeyBytes},
		{"--nats-tls-ca", *o.natsTLSCA, &a.TLSCA, stream.MaxNATSTLSCABytes}} {
		if f.path == "" {
			continue
		}
		if *o.nats == "" {
			return a, fmt.Errorf("%s goes with --nats", f.flag)
		}
		b, err := readLimited(f.path, f.max)
		if err != nil {
			return a, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.to = string(b)
	}
	a.NKey = strings.TrimSpace(a.NKey)
	return a, nil
}

// readLimited reads a file of at most max bytes.
func readLimited(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err == nil && len(b) > max {
		err = fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, err
}

// cliError is err, its message alone when it is the user's to fix.
func cliError(err error) error {
	if domain.ErrorCode(err) == domain.EINVALID {
		return refusedAsGiven{err}
	}
	return err
}

// refusedAsGiven prints its message alone and keeps its code, for the
// exit status (main).
type refusedAsGiven struct{ err error }

func (r refusedAsGiven) Error() string { return domain.ErrorMessage(r.err) }
func (r refusedAsGiven) Unwrap() error { return r.err }

// destinationListFlags declares destination list's flags.
func destinationListFlags(fs *flag.FlagSet) (tenant *string) {
	return fs.String("tenant", "", "tenant slug (required)")
}

func (e cliEnv) destinationList(ctx context.Context, args []string) error {
	fs := e.flags("destination list")
	tenant := destinationListFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" {
		fs.Usage()
		return fmt.Errorf("destination list: --tenant is required")
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error {
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
	if d.Filter != "" {
		parts = append(parts, "filter="+strconv.Quote(d.Filter))
	}
	if d.Transform != "" {
		parts = append(parts, "transform="+strconv.Quote(d.Transform))
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
	need string, given func() bool, fn func(s cliStore, tenantID int64) error) error {
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || !flagSet(fs, "id") || !given() {
		fs.Usage()
		return fmt.Errorf("%s: %s required", fs.Name(), need)
	}
	if *id < 1 {
		return fmt.Errorf("--id: give a destination id, as destination list shows it")
	}
	return e.withTenant(ctx, *tenant, func(s cliStore, t domain.Tenant) error { return cliError(fn(s, t.ID)) })
}

// destinationAction is a command that changes one destination and says so.
func destinationAction(name string, change func(cliStore, context.Context, int64, int64) error,
	done string) func(cliEnv, context.Context, []string) error {
	return func(e cliEnv, ctx context.Context, args []string) error {
		fs := e.flags(name)
		tenant, id := destinationIDFlags(fs)
		return e.onDestination(ctx, fs, args, tenant, id, "--tenant and --id are", func() bool { return true },
			func(s cliStore, tenantID int64) error {
				if err := change(s, ctx, tenantID, *id); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "destination %d %s\n", *id, done)
				return nil
			})
	}
}

// destinationRotateFlags declares destination rotate's flags.
func destinationRotateFlags(fs *flag.FlagSet) (tenant *string, id *int64, newKey *bool) {
	tenant, id = destinationIDFlags(fs)
	return tenant, id, fs.Bool("new-key", false, cli.NewKeyUsage)
}

func (e cliEnv) destinationRotate(ctx context.Context, args []string) error {
	fs := e.flags("destination rotate")
	tenant, id, newKey := destinationRotateFlags(fs)
	return e.onDestination(ctx, fs, args, tenant, id, "--tenant and --id are", func() bool { return true },
		func(s cliStore, tenantID int64) error {
			if *newKey {
				ctx = postgres.AllowNewKey(ctx)
			}
			secret, err := s.RotateDestinationSecret(ctx, tenantID, *id)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "rotated the signing secret of destination %d; messages carry a signature with the previous one too for %s\n"+
				"signing secret (shown once):\n%s\n", *id, domain.FormatDuration(stream.DestinationSecretGrace), secret)
			return nil
		})
}

func (e cliEnv) destinationRewind(ctx context.Context, args []string) error {
	fs := e.flags("destination rewind")
	tenant, id, after := destinationRewindFlags(fs)
	return e.onDestination(ctx, fs, args, tenant, id, "--tenant, --id and --after are", func() bool { return flagSet(fs, "after") },
		func(s cliStore, tenantID int64) error {
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

// The usage of --filter and --transform (docs/contract/destinations.md#filters-and-transforms).
const (
	filterUsage = "a CEL expression over change (and alert) returning a bool: only the messages it is true for are sent, " +
		`such as '"lifecyclestage" in change.changed' (default: every one)`
	transformUsage = "a CEL expression over change returning a map: the data of each change's message instead of the change, " +
		`such as '{"email": change.snapshot.email}' (default: the change)`
)

// destinationUpdateOptions are destination update's flags.
type destinationUpdateOptions struct {
	tenant                *string
	id                    *int64
	filter, transform     *string
	noFilter, noTransform *bool
}

// destinationUpdateFlags declares destination update's flags.
func destinationUpdateFlags(fs *flag.FlagSet) destinationUpdateOptions {
	o := destinationUpdateOptions{}
	o.tenant, o.id = destinationIDFlags(fs)
	o.filter = fs.String("filter", "", "the new filter: "+filterUsage)
	o.transform = fs.String("transform", "", "the new transform: "+transformUsage)
	o.noFilter = fs.Bool("no-filter", false, "remove the filter: every message is sent")
	o.noTransform = fs.Bool("no-transform", false, "remove the transform: each message's data is the change")
	return o
}

func (e cliEnv) destinationUpdate(ctx context.Context, args []string) error {
	fs := e.flags("destination update")
	o := destinationUpdateFlags(fs)
	var u stream.DestinationUpdate
	// given reads the flags into u once they are parsed, and reports
	// whether they change something, and none both sets and removes.
	given := func() bool {
		for _, f := range []struct {
			set, remove string
			value       *string
			to          **string
		}{{"filter", "no-filter", o.filter, &u.Filter}, {"transform", "no-transform", o.transform, &u.Transform}} {
			switch {
			case flagSet(fs, f.set) && flagSet(fs, f.remove):
				return false
			case flagSet(fs, f.set):
				*f.to = f.value
			case flagSet(fs, f.remove):
				*f.to = new(string)
			}
		}
		return !u.IsZero()
	}
	return e.onDestination(ctx, fs, args, o.tenant, o.id,
		"--tenant, --id and one of --filter, --no-filter, --transform, --no-transform (not an expression and its removal) are", given,
		func(s cliStore, tenantID int64) error {
			d, err := s.UpdateDestination(ctx, tenantID, *o.id, u)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "destination %d: filter %s, transform %s\n", d.ID, shown(d.Filter), shown(d.Transform))
			return nil
		})
}

// shown is an expression as the command line prints it.
func shown(expr string) string {
	if expr == "" {
		return "none"
	}
	return strconv.Quote(expr)
}
