// Package pubsubtest is a fake of Salesforce's Pub/Sub API for tests: a
// real gRPC server of the service in Salesforce's pubsub_api.proto
// (forcedotcom/pub-sub-api) on a loopback port, without TLS. It follows
// the Pub/Sub API Developer Guide: "Supported Authentication Methods"
// (accesstoken, instanceurl, tenantid headers), "Subscribe RPC Method"
// and "Flow Control Considerations" (num_requested, keep-alive answers
// with latest_replay_id), "Replaying an Event Stream" (LATEST, EARLIEST,
// CUSTOM; opaque replay ids) and "Handle Errors" (gRPC status with the
// error-code trailer and an rpcId in the message); and the Change Data
// Capture Developer Guide for the events (schemas.go, publish.go).
package pubsubtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1"
)

// The error codes the guide's "Handle Errors" lists, sent in the
// error-code trailer.
const (
	CodeReplayIDCorrupted = "sfdc.platform.eventbus.grpc.subscription.fetch.replayid.corrupted"
	CodeAuth              = "sfdc.platform.eventbus.grpc.service.auth.error"
)

// Counts are what the fake saw, for tests.
type Counts struct {
	Subscribes     int
	FetchRequests  int
	Delivered      int // events sent
	KeepAlives     int // answers without events
	MaxOutstanding int // the most events requested and not yet sent on one stream
	SchemaRequests int
	TopicRequests  int
	AuthFailures   int
	Open           int // subscriptions open now
	MaxOpen        int // the most subscriptions open at once
}

type entity struct {
	schema   avro.Schema
	json     string
	schemaID string
	channel  string // its single-entity channel
}

type stored struct {
	entity   string
	schemaID string
	payload  []byte
}

// Server is the fake.
type Server struct {
	eventbusv1.UnimplementedPubSubServer

	addr      string
	keepAlive time.Duration
	entities  map[string]entity // by entity name

	mu       sync.Mutex
	token    string // the credentials it accepts
	issued   func() []string
	instance string
	tenant   string
	log      []stored
	expired  int           // log[:expired] is past retention
	changed  chan struct{} // closed and replaced at each AddChange
	counts   Counts
	rpcCount int
}

// New starts a fake, stopped at the end of the test. It sends a keep-alive
// after keepAlive without events; 0 is Salesforce's 270 seconds.
func New(t testing.TB, keepAlive time.Duration) *Server {
	t.Helper()
	if keepAlive <= 0 {
		keepAlive = 270 * time.Second
	}
	s := &Server{token: "00Dfake!token", instance: "https://fake.my.salesforce.com", tenant: "00D000000000001AAA",
		keepAlive: keepAlive, entities: map[string]entity{}, changed: make(chan struct{})}
	for name, schemaJSON := range map[string]string{"Contact": ContactSchema, "Invoice__c": InvoiceSchema} {
		schema, err := avro.ParseWithCache(schemaJSON, "", &avro.SchemaCache{})
		if err != nil {
			t.Fatalf("pubsubtest: schema of %s: %v", name, err)
		}
		sum := sha256.Sum256([]byte(schemaJSON))
		channel := "/data/" + name + "ChangeEvent"
		if base, ok := strings.CutSuffix(name, "__c"); ok {
			channel = "/data/" + base + "__ChangeEvent"
		}
		s.entities[name] = entity{schema: schema, json: schemaJSON, channel: channel,
			schemaID: base64.RawURLEncoding.EncodeToString(sum[:16])}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pubsubtest: listen: %v", err)
	}
	srv := grpc.NewServer()
	eventbusv1.RegisterPubSubServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	s.addr = lis.Addr().String()
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Accept makes the server accept these credentials alone (an OAuth access
// token, the org's instance URL and its id).
func (s *Server) Accept(token, instanceURL, tenantID string) {
	s.mu.Lock()
	s.token, s.issued, s.instance, s.tenant = token, nil, instanceURL, tenantID
	s.mu.Unlock()
}

// AcceptIssued makes the server accept any token issued lists (the
// tokens the fake Salesforce org issued, salesforcetest's Tokens), with the
// org's instance URL and id: a subscriber signs in by itself.
func (s *Server) AcceptIssued(issued func() []string, instanceURL, tenantID string) {
	s.mu.Lock()
	s.issued, s.instance, s.tenant = issued, instanceURL, tenantID
	s.mu.Unlock()
}

// Credentials are the credentials the server accepts.
func (s *Server) Credentials() (token, instanceURL, tenantID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.instance, s.tenant
}

// Counts returns what the server saw so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// refusal is a gRPC status as the guide's "Handle Errors" shows one: the
// error code in the error-code trailer and an rpcId in the message.
func (s *Server) refusal(ctx context.Context, c codes.Code, errorCode, msg string) error {
	s.mu.Lock()
	s.rpcCount++
	rpcID := fmt.Sprintf("fake-rpc-%d", s.rpcCount)
	s.mu.Unlock()
	if errorCode != "" {
		grpc.SetTrailer(ctx, metadata.Pairs("error-code", errorCode, "rpc-id", rpcID))
	}
	return status.Errorf(c, "%s rpcId: %s", msg, rpcID)
}

// authorize checks the three headers of "Supported Authentication Methods"
// (OAuth: accesstoken, instanceurl, tenantid).
func (s *Server) authorize(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) == 1 {
			return v[0]
		}
		return ""
	}
	s.mu.Lock()
	token := get("accesstoken") == s.token
	if s.issued != nil {
		token = slices.Contains(s.issued(), get("accesstoken"))
	}
	if token && get("instanceurl") == s.instance && get("tenantid") == s.tenant {
		s.mu.Unlock()
		return nil
	}
	s.counts.AuthFailures++
	s.mu.Unlock()
	return s.refusal(ctx, codes.Unauthenticated, CodeAuth,
		"An authentication exception occurred. Provide valid authentication via metadata headers.")
}

// GetTopic describes a channel: /data/ChangeEvents (every entity) or an
// entity's own. The guide does not document how an unknown topic is
// refused; the fake answers NOT_FOUND.
func (s *Server) GetTopic(ctx context.Context, req *eventbusv1.TopicRequest) (*eventbusv1.TopicInfo, error) {
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.counts.TopicRequests++
	tenant := s.tenant
	s.mu.Unlock()
	info := &eventbusv1.TopicInfo{TopicName: req.GetTopicName(), TenantGuid: tenant, CanSubscribe: true}
	if req.GetTopicName() == "/data/ChangeEvents" {
		return info, nil
	}
	for _, e := range s.entities {
		if e.channel == req.GetTopicName() {
			info.SchemaId = e.schemaID
			return info, nil
		}
	}
	return nil, s.refusal(ctx, codes.NotFound, "", "topic "+req.GetTopicName()+" not found")
}

// GetSchema answers a schema by id (NOT_FOUND for another, as GetTopic).
func (s *Server) GetSchema(ctx context.Context, req *eventbusv1.SchemaRequest) (*eventbusv1.SchemaInfo, error) {
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.counts.SchemaRequests++
	s.mu.Unlock()
	for _, e := range s.entities {
		if e.schemaID == req.GetSchemaId() {
			return &eventbusv1.SchemaInfo{SchemaId: e.schemaID, SchemaJson: e.json}, nil
		}
	}
	return nil, s.refusal(ctx, codes.NotFound, "", "schema "+req.GetSchemaId()+" not found")
}

// inTopic is whether an event of entity name is sent on topic.
func (s *Server) inTopic(name, topic string) bool {
	return topic == "/data/ChangeEvents" || s.entities[name].channel == topic
}
