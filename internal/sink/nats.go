package sink

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/changejson"
	"github.com/tidemark/tidemark/internal/egress"
	"github.com/tidemark/tidemark/internal/whsig"
)

func init() { Register(natsKind{}) }

// natsKind publishes each change to a NATS JetStream server, on the
// subject PREFIX.{tenant}.{provider}.{object_type}
// (docs/contract/destinations.md#nats). It takes record types only.
type natsKind struct{}

func (natsKind) Name() string   { return "nats" }
func (natsKind) Format() string { return stream.FormatStandard }

func (natsKind) Accepts(types []string) error {
	if stream.HasAlertTypes(types) {
		return domain.Errorf(domain.EINVALID, "types: alert types are sent to url destinations only; a NATS destination takes record types")
	}
	return nil
}

// Check checks nats_url, the subject prefix and the form of the
// credentials, which a NATS destination needs unless AllowPrivate: its
// messages carry the tenant's records, and a server that admits anyone
// lets anyone read them and publish forged ones. Whether they parse is
// Reach's to say.
func (natsKind) Check(nd stream.NewDestination) (stream.NewDestination, error) {
	switch {
	case nd.NATSURL == "" && nd.URL != "":
		return nd, domain.Errorf(domain.EINVALID, "kind nats takes nats_url and subject, not url")
	case nd.NATSURL == "" && nd.Subject != "":
		return nd, domain.Errorf(domain.EINVALID, "subject needs nats_url, the NATS server to publish to")
	case nd.NATSURL == "":
		return nd, domain.Errorf(domain.EINVALID, "kind nats needs nats_url and subject, the NATS server and subject prefix to publish to")
	}
	if err := checkURL("nats_url", nd.NATSURL, "nats", "tls"); err != nil {
		return nd, err
	}
	if err := checkSubject(nd.Subject); err != nil {
		return nd, err
	}
	if nd.Format != stream.FormatStandard {
		return nd, domain.Errorf(domain.EINVALID, "format slack needs url, a Slack-compatible incoming webhook")
	}
	a := nd.NATS
	a.NKey = strings.TrimSpace(a.NKey)
	switch {
	case a.Creds != "" && a.NKey != "":
		return nd, domain.Errorf(domain.EINVALID, "give nats_creds or nats_nkey, not both")
	case a.Creds == "" && a.NKey == "" && !nd.AllowPrivate:
		return nd, domain.Errorf(domain.EINVALID, "nats_url needs credentials for the NATS server: nats_creds (the text of "+
			"a .creds file) or nats_nkey (a user nkey seed). The messages carry the workspace's records, so Tidemark "+
			"does not publish to a server that admits anyone; give the account it uses publish permission on the subject prefix only")
	case len(a.Creds) > stream.MaxNATSCredsBytes:
		return nd, domain.Errorf(domain.EINVALID, "nats_creds is %d bytes; at most %d", len(a.Creds), stream.MaxNATSCredsBytes)
	case len(a.NKey) > stream.MaxNATSNKeyBytes:
		return nd, domain.Errorf(domain.EINVALID, "nats_nkey is %d bytes; at most %d", len(a.NKey), stream.MaxNATSNKeyBytes)
	case len(a.TLSCA) > stream.MaxNATSTLSCABytes:
		return nd, domain.Errorf(domain.EINVALID, "nats_tls_ca is %d bytes; at most %d", len(a.TLSCA), stream.MaxNATSTLSCABytes)
	}
	nd.NATS = a
	return nd, nil
}

// Reach checks that the credentials parse, then the server's address.
func (natsKind) Reach(ctx context.Context, nd stream.NewDestination) error {
	if err := CheckNATSAuth(nd.NATS); err != nil {
		return err
	}
	if _, err := egress.CheckNATSURL(ctx, nd.NATSURL, nd.AllowPrivate); err != nil {
		return Refuse("nats_url", err)
	}
	return nil
}

// checkSubject checks a NATS subject prefix: dot-separated tokens without
// wildcards or spaces, to which the sender appends
// .{tenant}.{provider}.{object_type}.
func checkSubject(s string) error {
	if s == "" {
		return domain.Errorf(domain.EINVALID, "subject is required with nats_url: the prefix of the subjects to publish to, such as crm.changes")
	}
	if len(s) > stream.MaxSubjectBytes {
		return domain.Errorf(domain.EINVALID, "subject is %d bytes; at most %d", len(s), stream.MaxSubjectBytes)
	}
	for _, token := range strings.Split(s, ".") {
		if token == "" {
			return domain.Errorf(domain.EINVALID, "subject %q has an empty token; separate tokens with single dots and do not end with one", s)
		}
		for _, r := range token {
			if r == '*' || r == '>' || r <= ' ' || r == 0x7f {
				return domain.Errorf(domain.EINVALID, "subject %q may not hold wildcards (* >), spaces or control characters", s)
			}
		}
	}
	return nil
}

func (natsKind) Open(o Options) Conn { return &natsPublisher{o: o, conns: newNATSConns(o)} }

// natsPublisher publishes through the sender's NATS connections.
type natsPublisher struct {
	o     Options
	conns *natsConns
}

// Send publishes m, a change, to d's JetStream, with the change id as
// Nats-Msg-Id so that the stream drops a repeat within its duplicate
// window, and signed as a webhook message is: webhook-id,
// webhook-timestamp and webhook-signature, spelled so, with d's secrets.
func (n *natsPublisher) Send(ctx context.Context, d stream.LeasedDestination, m stream.QueuedChange) Answer {
	if m.Alert != nil { // refused at creation
		return Answer{Err: "not sent: alert events are sent to url destinations only"}
	}
	c := m.Change
	body, err := changejson.MarshalMessage(c, m.Data)
	if err != nil {
		return Answer{Err: "encode: " + err.Error()}
	}
	msg := &nats.Msg{Subject: Subject(d.Subject, d.TenantSlug, c.Provider, c.ObjectType), Data: body,
		Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, c.ID())
	if err := whsig.Headers(msg.Header, d.Secrets, c.ID(), time.Now(), body); err != nil {
		return Answer{Err: err.Error()}
	}
	if err := n.conns.publish(ctx, d, msg); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Answer{Err: fmt.Sprintf("timeout: no acknowledgement within %s", n.o.Timeout)}
		}
		return Answer{Err: n.natsError(d, err)}
	}
	return Answer{Status: http.StatusOK}
}

func (n *natsPublisher) Close() { n.conns.close() }

// natsError is the text of err, a failure to publish to d's server, as an
// attempt keeps it: like transportError's, it names the host and not the
// address it resolved to nor the resolver, whose text is logged at debug.
func (n *natsPublisher) natsError(d stream.LeasedDestination, err error) string {
	host := ""
	if u, perr := url.Parse(d.NATSURL); perr == nil {
		host = u.Hostname()
	}
	text, detail := egress.ConnError(host, err)
	if detail != "" {
		n.o.Log.Debug("destination sender: connection refused or unresolved", "tenant_id", d.TenantID,
			"destination_id", d.ID, "detail", detail)
	}
	return text
}

// Subject is the subject of a change: prefix, then the tenant, provider and
// object type, each made a single NATS token.
func Subject(prefix, tenant, provider, objectType string) string {
	return prefix + "." + token(tenant) + "." + token(provider) + "." + token(objectType)
}

// token replaces what a NATS token cannot hold (".", "*", ">", white
// space) with "_".
func token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return '_'
		}
		return r
	}, s)
}

// CheckNATSAuth checks that a NATS destination's credentials parse: a
// credentials file holding a user JWT and the user's nkey seed, a user
// nkey seed, PEM certificates. Every refusal is EINVALID and names the
// field, never what it holds.
func CheckNATSAuth(a stream.NATSAuth) error {
	_, err := natsAuthOptions(a)
	return err
}

// natsAuthOptions are the connection options of a's credentials and
// certificate authorities.
func natsAuthOptions(a stream.NATSAuth) ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case a.Creds != "":
		token, err := nkeys.ParseDecoratedJWT([]byte(a.Creds))
		if err != nil {
			return nil, domain.Errorf(domain.EINVALID, "nats_creds holds no user JWT")
		}
		claims, err := jwt.DecodeUserClaims(token)
		if err != nil {
			return nil, domain.Errorf(domain.EINVALID, "nats_creds: its user JWT does not decode; give the .creds file as nsc or the account's operator wrote it")
		}
		kp, err := nkeys.ParseDecoratedUserNKey([]byte(a.Creds))
		if err != nil {
			return nil, domain.Errorf(domain.EINVALID, "nats_creds holds no user nkey seed (SU...)")
		}
		seed, _ := kp.Seed()
		if pub, _ := kp.PublicKey(); pub != claims.Subject {
			return nil, domain.Errorf(domain.EINVALID, "nats_creds: its seed is not that of the user its JWT names")
		}
		opts = append(opts, nats.UserJWTAndSeed(token, string(seed)))
	case a.NKey != "":
		kp, err := nkeys.FromSeed([]byte(a.NKey))
		if err != nil || !strings.HasPrefix(a.NKey, "SU") {
			return nil, domain.Errorf(domain.EINVALID, "nats_nkey is not a user nkey seed (SU...)")
		}
		pub, _ := kp.PublicKey()
		opts = append(opts, nats.Nkey(pub, kp.Sign))
	}
	if a.TLSCA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(a.TLSCA)) {
			return nil, domain.Errorf(domain.EINVALID, "nats_tls_ca holds no PEM certificate")
		}
		opts = append(opts, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	return opts, nil
}

// natsConns are the sender's NATS connections: one per server, private
// addresses allowed or not, and credentials, shared by the destinations
// that publish there. One nobody has published on for idle is closed, so
// a destination deleted, paused or taken by another node leaves nothing
// open; and there are at most max of them (the destinations a node
// leases), so no number of destinations created and deleted grows them
// (the review's L2).
type natsConns struct {
	timeout, idle time.Duration
	max           int

	mu    sync.Mutex
	conns map[natsKey]*natsConn
}

type natsKey struct {
	url          string
	allowPrivate bool
	auth         [sha256.Size]byte // of the credentials, which the map need not hold
}

// natsConn is one connection. Its own lock keeps a server that does not
// answer from holding up the others; users and idle are natsConns.mu's.
type natsConn struct {
	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream

	users int         // publishes under way
	idle  *time.Timer // closes it once idle with no user
}

func newNATSConns(o Options) *natsConns {
	return &natsConns{timeout: o.Timeout, idle: o.Idle, max: o.MaxConns, conns: map[natsKey]*natsConn{}}
}

// publish publishes msg on the connection for d, connecting if need be,
// and waits for JetStream's acknowledgement.
func (n *natsConns) publish(ctx context.Context, d stream.LeasedDestination, msg *nats.Msg) error {
	k := natsKey{url: d.NATSURL, allowPrivate: d.AllowPrivate,
		auth: sha256.Sum256([]byte(d.NATS.Creds + "\x00" + d.NATS.NKey + "\x00" + d.NATS.TLSCA))}
	c, err := n.use(k)
	if err != nil {
		return err
	}
	defer n.done(k, c)
	js, err := c.connect(d, n.timeout)
	if err != nil {
		return err
	}
	_, err = js.PublishMsg(ctx, msg)
	return err
}

// use counts a publish on k's connection, making its entry if need be.
func (n *natsConns) use(k natsKey) (*natsConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.conns[k]
	if c == nil {
		if len(n.conns) >= n.max && !n.dropOneIdle() {
			return nil, fmt.Errorf("not connected: this node has %d NATS connections in use, its limit", len(n.conns))
		}
		c = &natsConn{}
		n.conns[k] = c
	}
	c.users++
	if c.idle != nil {
		c.idle.Stop()
	}
	return c, nil
}

// done ends a publish on k's connection; the last user starts its idle
// time.
func (n *natsConns) done(k natsKey, c *natsConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.users--; c.users > 0 {
		return
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(n.idle, func() { n.closeIdle(k, c) })
	} else {
		c.idle.Reset(n.idle)
	}
}

// closeIdle closes k's connection unless it was used again meanwhile.
func (n *natsConns) closeIdle(k natsKey, c *natsConn) {
	n.mu.Lock()
	if c.users > 0 || n.conns[k] != c {
		n.mu.Unlock()
		return
	}
	delete(n.conns, k)
	n.mu.Unlock()
	c.close()
}

// dropOneIdle closes a connection nobody is publishing on, to make room,
// and reports whether there was one. n.mu is held.
func (n *natsConns) dropOneIdle() bool {
	for k, c := range n.conns {
		if c.users == 0 {
			delete(n.conns, k)
			if c.idle != nil {
				c.idle.Stop()
			}
			go c.close() // not under n.mu: a close may wait for a flush
			return true
		}
	}
	return false
}

// connect returns JetStream on the connection, connecting when it is not
// (first use, or closed by the server: it does not reconnect by itself).
func (c *natsConn) connect(d stream.LeasedDestination, timeout time.Duration) (jetstream.JetStream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil && !c.nc.IsClosed() {
		return c.js, nil
	}
	auth, err := natsAuthOptions(d.NATS)
	if err != nil {
		return nil, fmt.Errorf("NATS credentials: %w", err)
	}
	// No reconnects, no buffer of publishes made while disconnected, and
	// no servers but the destination's: a server that drops the connection
	// leaves it closed, and the next publish connects again (or not, once
	// the destination is gone), rather than a client redialling it, or the
	// servers it advertised, forever.
	opts := append([]nats.Option{nats.Name("tidemark destination sender"), nats.Timeout(timeout),
		nats.SetCustomDialer(egress.Dialer(d.AllowPrivate, timeout)), nats.NoReconnect(), nats.ReconnectBufSize(-1),
		nats.IgnoreDiscoveredServers()}, auth...)
	nc, err := nats.Connect(d.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.nc, c.js = nc, js
	return js, nil
}

func (c *natsConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		c.nc.Close()
	}
}

// close closes every connection, when the sender stops.
func (n *natsConns) close() {
	n.mu.Lock()
	conns := n.conns
	n.conns = map[natsKey]*natsConn{}
	for _, c := range conns {
		if c.idle != nil {
			c.idle.Stop()
		}
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}
