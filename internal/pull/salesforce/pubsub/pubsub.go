// Package pubsub reads Salesforce Change Data Capture events over the
// Pub/Sub API (gRPC service eventbus.v1.PubSub, compiled in eventbusv1 from
// Salesforce's pubsub_api.proto) and turns them into Tidemark events.
//
// Dial opens a connection authenticated as the Pub/Sub API Developer Guide
// documents ("Supported Authentication Methods": accesstoken, instanceurl
// and tenantid metadata headers); Subscribe reads a channel with the flow
// control it documents ("Flow Control Considerations": num_requested at
// most 100, asked again only for what was taken); decode.go decodes the
// Avro payloads and the ChangeEventHeader; Events makes the events of one
// change. The fake in pubsubtest serves the same proto. The generated code
// comes from go generate ./internal/pull/salesforce/pubsub/eventbusv1.
package pubsub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/salesforce"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1"
)

// MaxRequested is the most events a subscription may have asked for and
// not yet received (Pub/Sub API allocations: num_requested at most 100).
const MaxRequested = 100

// Credentials are what the Pub/Sub API authenticates a call with: the
// connected app's OAuth access token, the org's instance URL, and the
// org's id as tenant.
type Credentials struct {
	AccessToken string
	InstanceURL string
	TenantID    string
}

// Config is how to reach the Pub/Sub API.
type Config struct {
	// Address is host:port; "" is domain.DefaultPubSubAddress.
	Address string
	// AllowPrivate speaks plaintext gRPC, for a test server on a loopback
	// address; otherwise the connection is TLS.
	AllowPrivate bool
	// Token returns the credentials of each call (the backfill's
	// client-credentials sign-in, cached by its caller).
	Token func(context.Context) (Credentials, error)
}

// Client is a connection to the Pub/Sub API. It is safe for concurrent use.
type Client struct {
	conn *grpc.ClientConn
	api  eventbusv1.PubSubClient

	mu      sync.Mutex
	schemas map[string]decoder // by schema id
}

// Dial connects to the Pub/Sub API. The connection is made lazily: a bad
// address or refused credentials fail the first call, not Dial.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Token == nil {
		return nil, errors.New("pubsub: no token source")
	}
	addr := cfg.Address
	if addr == "" {
		addr = domain.DefaultPubSubAddress
	}
	transport := credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	if cfg.AllowPrivate {
		transport = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(transport),
		grpc.WithPerRPCCredentials(auth{token: cfg.Token, secure: !cfg.AllowPrivate}))
	if err != nil {
		return nil, fmt.Errorf("pubsub: connecting to %s: %w", addr, err)
	}
	return &Client{conn: conn, api: eventbusv1.NewPubSubClient(conn), schemas: map[string]decoder{}}, nil
}

// Close closes the connection; open subscriptions end.
func (c *Client) Close() error { return c.conn.Close() }

// auth sends the credentials as the metadata headers the Pub/Sub API
// reads.
type auth struct {
	token  func(context.Context) (Credentials, error)
	secure bool
}

func (a auth) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	c, err := a.token(ctx)
	if err != nil {
		return nil, fmt.Errorf("pubsub: signing in: %w", err)
	}
	return map[string]string{"accesstoken": c.AccessToken, "instanceurl": c.InstanceURL, "tenantid": c.TenantID}, nil
}

func (a auth) RequireTransportSecurity() bool { return a.secure }

// SourceToken is the token function of the org whose id is orgID, signed
// in to by src, the backfill's source of the same provider. After
// ErrAuthentication, src.Forget(the refused access token) makes the next
// call sign in again.
func SourceToken(src *salesforce.Source, orgID string) func(context.Context) (Credentials, error) {
	return func(ctx context.Context) (Credentials, error) {
		token, instance, err := src.Session(ctx)
		if err != nil {
			return Credentials{}, err
		}
		return Credentials{AccessToken: token, InstanceURL: instance, TenantID: orgID}, nil
	}
}

// GetTopic describes a topic (a channel such as /data/ChangeEvents).
func (c *Client) GetTopic(ctx context.Context, name string) (*eventbusv1.TopicInfo, error) {
	var trailer metadata.MD
	info, err := c.api.GetTopic(ctx, &eventbusv1.TopicRequest{TopicName: name}, grpc.Trailer(&trailer))
	if err != nil {
		return nil, classify("GetTopic "+name, err, trailer)
	}
	return info, nil
}

// decoderFor is the decoder of a schema id, asking GetSchema once per id.
func (c *Client) decoderFor(ctx context.Context, id string) (decoder, error) {
	c.mu.Lock()
	d, ok := c.schemas[id]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	var trailer metadata.MD
	info, err := c.api.GetSchema(ctx, &eventbusv1.SchemaRequest{SchemaId: id}, grpc.Trailer(&trailer))
	if err != nil {
		return decoder{}, classify("GetSchema "+id, err, trailer)
	}
	if d, err = newDecoder(info.GetSchemaJson()); err != nil {
		return decoder{}, fmt.Errorf("schema %s: %w", id, err)
	}
	c.mu.Lock()
	c.schemas[id] = d
	c.mu.Unlock()
	return d, nil
}

// The Pub/Sub API's error codes, sent in the error-code trailer ("Handle
// Errors", Pub/Sub API Developer Guide).
const (
	codeReplayIDCorrupted = "sfdc.platform.eventbus.grpc.subscription.fetch.replayid.corrupted"
	codeAuth              = "sfdc.platform.eventbus.grpc.service.auth.error"
	codeUnavailable       = "sfdc.platform.eventbus.grpc.service.unavailable"
	codeClientLimit       = "sfdc.platform.eventbus.grpc.concurrent.client.limit.exceeded"
)

var (
	// ErrReplayIDCorrupted is wrapped by the error of a subscription from a
	// replay id Salesforce no longer knows (past its retention, or from
	// another org): resubscribe from another position.
	ErrReplayIDCorrupted = errors.New("pubsub: Salesforce no longer knows the replay id")
	// ErrAuthentication is wrapped when Salesforce refuses the credentials:
	// sign in again before retrying.
	ErrAuthentication = errors.New("pubsub: Salesforce refused the credentials")
)

// Error is a call the Pub/Sub API refused or that failed on the way.
type Error struct {
	Op        string
	Code      codes.Code
	ErrorCode string // the error-code trailer, when Salesforce sent one
	Message   string
	sentinel  error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("pubsub: %s: %s", e.Op, e.Code)
	if e.ErrorCode != "" {
		msg += " " + e.ErrorCode
	}
	return fmt.Sprintf("%s: %.300s", msg, e.Message)
}

func (e *Error) Unwrap() error { return e.sentinel }

// Retryable is true for what may succeed later as is: a connection lost or
// a service unavailable or overloaded. A corrupted replay id, refused
// credentials or a bad request are not (the first two have their own
// remedies: ErrReplayIDCorrupted, ErrAuthentication).
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case e.ErrorCode == codeUnavailable || e.ErrorCode == codeClientLimit:
		return true
	case e.sentinel != nil:
		return false
	}
	switch e.Code {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Aborted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// classify turns a gRPC failure into an *Error, reading Salesforce's
// error code from the trailer.
func classify(op string, err error, trailer metadata.MD) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("pubsub: %s: %w", op, err)
	}
	e := &Error{Op: op, Code: st.Code(), Message: st.Message()}
	if v := trailer.Get("error-code"); len(v) > 0 {
		e.ErrorCode = v[0]
	}
	switch {
	case e.ErrorCode == codeReplayIDCorrupted:
		e.sentinel = ErrReplayIDCorrupted
	case e.ErrorCode == codeAuth || e.Code == codes.Unauthenticated:
		e.sentinel = ErrAuthentication
	}
	return e
}
