// Package sink holds the kinds of destinations, as internal/provider holds
// the kinds of providers: each kind (webhook.go, slack.go, nats.go) checks
// what an owner gives for a destination of it and sends it a change or an
// alert event, and registers itself from its init. A destination's kind
// is stored (destinations.kind); the sender (internal/outbound) leases
// destinations and sends through Conns, never asking which kind it holds.
package sink

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
)

// Kind is one kind of destination.
type Kind interface {
	// Name is the kind as stored, and as the API and console show it.
	Name() string
	// Format is the body its alert messages take: stream.FormatStandard or
	// stream.FormatSlack (the destination's format field).
	Format() string
	// Accepts checks the type patterns a destination of the kind is sent,
	// its defaults filled in.
	Accepts(types []string) error
	// Check checks the form of the kind's own fields of nd (its target,
	// credentials and format) and returns nd with them filled in; it
	// reaches out to nothing, so that storage may run it too (CheckForm).
	Check(nd stream.NewDestination) (stream.NewDestination, error)
	// Reach checks that nd, whose form is checked, may be reached: that
	// its host is not, nor resolves to, a private address unless
	// nd.AllowPrivate (internal/egress), and that its credentials parse.
	// A refusal is EINVALID naming the field and host (Refuse).
	Reach(ctx context.Context, nd stream.NewDestination) error
	// Open makes what one sender sends to destinations of the kind with:
	// clients and connections, kept until Close.
	Open(o Options) Conn
}

// Conn sends to leased destinations of one kind.
type Conn interface {
	// Send makes one attempt to deliver m, a change or an alert event, to
	// d; ctx bounds it.
	Send(ctx context.Context, d stream.LeasedDestination, m stream.QueuedChange) Answer
	Close()
}

// Answer is what an attempt got: an HTTP status (200 for a JetStream
// acknowledgement, 0 for none), an error to record, and the wait the
// destination asked for (Retry-After).
type Answer struct {
	Status     int
	Err        string
	RetryAfter time.Duration
}

// Options are a sender's, for its Conns.
type Options struct {
	Timeout  time.Duration // for an answer to one message
	Idle     time.Duration // a connection unused this long is closed
	MaxConns int           // connections of one kind at most (the destinations a node leases)
	Log      *slog.Logger
}

var registry = map[string]Kind{}

// Register adds a kind; each kind's file calls it from init.
func Register(k Kind) {
	if _, dup := registry[k.Name()]; dup {
		panic("sink: kind " + k.Name() + " registered twice")
	}
	registry[k.Name()] = k
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	k, ok := registry[name]
	return k, ok
}

// Names lists the registered kinds by name.
func Names() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Check validates what an owner gives for a destination (CheckForm), then
// that it may be reached (Kind.Reach), and returns it with its kind and
// defaults filled in. Every refusal is EINVALID; one of a host names the
// host, never what it resolved to nor the resolver's error:
// egress.Detail(err) has those, for the server log. The API, the console
// and the CLI check with it before storing.
func Check(ctx context.Context, nd stream.NewDestination) (stream.NewDestination, error) {
	nd, err := CheckForm(nd)
	if err != nil {
		return nd, err
	}
	k, _ := Lookup(nd.Kind)
	return nd, k.Reach(ctx, nd)
}

// CheckForm validates the form of what an owner gives for a destination,
// reaching out to nothing, and returns it with its kind and defaults
// filled in (format, types, max in flight). Without a kind, the fields
// imply one as they always have (implied); a kind given must agree with
// them.
func CheckForm(nd stream.NewDestination) (stream.NewDestination, error) {
	switch nd.Format {
	case "", stream.FormatStandard, stream.FormatSlack:
	default:
		return nd, domain.Errorf(domain.EINVALID, "format must be standard or slack, not %q", nd.Format)
	}
	if nd.URL != "" && (nd.NATSURL != "" || nd.Subject != "") {
		return nd, domain.Errorf(domain.EINVALID, "give either url, or nats_url with subject, not both")
	}
	var k Kind
	if nd.Kind == "" {
		var err error
		if k, err = implied(nd); err != nil {
			return nd, err
		}
	} else {
		var ok bool
		if k, ok = Lookup(nd.Kind); !ok {
			return nd, domain.Errorf(domain.EINVALID, "kind %q is not a destination kind: one of %s", nd.Kind, strings.Join(Names(), ", "))
		}
		if nd.Format != "" && nd.Format != k.Format() {
			return nd, domain.Errorf(domain.EINVALID, "kind %s sends format %s, not %s", k.Name(), k.Format(), nd.Format)
		}
	}
	nd.Kind = k.Name()
	if nd.Format == "" {
		nd.Format = k.Format()
	}
	nd, err := nd.Check()
	if err != nil {
		return nd, err
	}
	if err := k.Accepts(nd.Types); err != nil {
		return nd, err
	}
	return k.Check(nd)
}

// implied is the kind of a destination created without one, as the
// fields have always said it: NATS with nats_url or subject, slack with
// format slack, a webhook otherwise. A kind added later is given by name.
func implied(nd stream.NewDestination) (Kind, error) {
	switch {
	case nd.NATSURL != "" || nd.Subject != "":
		return natsKind{}, nil
	case nd.URL == "":
		return nil, domain.Errorf(domain.EINVALID, "give url (an http or https URL to POST to), or nats_url and subject")
	case nd.Format == stream.FormatSlack:
		return slackKind{}, nil
	}
	return webhookKind{}, nil
}

// Conns are a sender's connections: one Conn of each kind.
type Conns struct {
	byKind map[string]Conn
}

// Open opens a Conn of every kind.
func Open(o Options) *Conns {
	c := &Conns{byKind: make(map[string]Conn, len(registry))}
	for name, k := range registry {
		c.byKind[name] = k.Open(o)
	}
	return c
}

// Send makes one attempt to deliver m to d, through the Conn of d's kind.
func (c *Conns) Send(ctx context.Context, d stream.LeasedDestination, m stream.QueuedChange) Answer {
	conn, ok := c.byKind[d.Kind]
	if !ok {
		return Answer{Err: "not sent: this node does not know destination kind " + d.Kind}
	}
	return conn.Send(ctx, d, m)
}

// Close closes every Conn, when the sender stops.
func (c *Conns) Close() {
	for _, conn := range c.byKind {
		conn.Close()
	}
}

// Refuse is the refusal of field's URL by internal/egress: EINVALID, and
// the egress error it says (which wraps egress.ErrPrivate for a private
// address, so that the CLI can point at --allow-private, and holds
// egress.Detail for the server log).
func Refuse(field string, err error) error {
	// egress names the field "url" and never repeats the URL.
	return refusal{domain.Errorf(domain.EINVALID, "%s: %s", field, strings.TrimPrefix(err.Error(), "url: ")), err}
}

type refusal struct {
	refusal *domain.Error
	egress  error
}

func (r refusal) Error() string   { return r.refusal.Error() }
func (r refusal) Unwrap() []error { return []error{r.refusal, r.egress} }

// checkURL checks that field's raw is an absolute URL of one of schemes
// with a host and no user information.
func checkURL(field, raw string, schemes ...string) error {
	if len(raw) > stream.MaxDestinationURLBytes {
		return domain.Errorf(domain.EINVALID, "%s is %d bytes; at most %d", field, len(raw), stream.MaxDestinationURLBytes)
	}
	// The messages do not repeat the URL: its query may hold a credential.
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return domain.Errorf(domain.EINVALID, "%s is not an absolute URL such as %s://host.example.com/", field, schemes[0])
	}
	if u.User != nil {
		return domain.Errorf(domain.EINVALID, "%s must not contain a user name or password", field)
	}
	if slices.Contains(schemes, u.Scheme) {
		return nil
	}
	return domain.Errorf(domain.EINVALID, "%s: the scheme must be %s", field, strings.Join(schemes, " or "))
}
