// Package queue is the delivery queue of queued mode (`serve --queue`,
// `tidemark worker`) on NATS JetStream, and the only importer of nats.go
// besides cmd. serve publishes each authenticated, parsed delivery and
// answers once JetStream acknowledged storing it; workers ingest them with
// the ingest of synchronous mode and acknowledge each after its commit.
//
// Order: a tenant's deliveries all go to one of Partitions subjects
// (<stream>.in.<partition>.<tenant id>), and each partition has one durable
// pull consumer allowing one unacknowledged message (MaxAckPending 1).
// Whatever the number of workers, a partition's deliveries are applied one
// at a time in the order JetStream stored them, so the events of a record
// (and a HubSpot batch spanning records) keep their arrival order; tenants
// of different partitions are applied in parallel. docs/scale.md explains
// the choice.
//
// Trust: every message is signed and encrypted by serve under keys derived
// from TIDEMARK_ENCRYPTION_KEY (seal.go); a worker applies nothing that
// does not verify, so access to NATS neither reads nor forges deliveries.
package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tidemark/tidemark/domain"
)

// Defaults of the stream's settings (serve --stream, --stream-replicas,
// --stream-duplicates).
const (
	DefaultStream     = "TIDEMARK"
	DefaultReplicas   = 1
	DefaultDuplicates = 2 * time.Minute
)

// Partitions is how many subjects, each with its own consumer, the
// deliveries are spread over by tenant: at most this many deliveries are
// applied at once across all workers. It is fixed: changing it would move
// tenants between partitions with deliveries still queued, out of order.
const Partitions = 16

// Config says where the queue lives.
type Config struct {
	URL        string        // nats://host:4222
	Stream     string        // the stream's name; DefaultStream when empty
	Replicas   int           // copies of each message; DefaultReplicas when 0
	Duplicates time.Duration // the duplicate window; DefaultDuplicates when 0
	Name       string        // the connection's name, shown by the server
	Logger     *slog.Logger
	// Keys are TIDEMARK_ENCRYPTION_KEY's keys (raw, 32 bytes each): the
	// first signs and encrypts what serve publishes, every one opens.
	// Required.
	Keys [][]byte
	// DeadMaxAge is how long dead letters are kept (serve's --retention);
	// 0 keeps them until removed.
	DeadMaxAge time.Duration
	// Credentials, NKey and TLSCA are files: a NATS credentials file (JWT
	// and seed), an nkey seed, and the CA certificates of the server's TLS.
	Credentials, NKey, TLSCA string
}

// Queue is a connection to the stream of queued deliveries.
type Queue struct {
	cfg  Config
	nc   *nats.Conn
	js   jetstream.JetStream
	log  *slog.Logger
	keys keyring

	mu      sync.Mutex
	ensured bool // the streams exist, as far as this process knows
}

var streamName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Open connects to the NATS server at cfg.URL. It returns at once: while the
// server cannot be reached the connection keeps trying in the background,
// and Enqueue answers EUNAVAILABLE. Ensure (or KeepEnsured) creates the
// streams.
func Open(cfg Config) (*Queue, error) {
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if !streamName.MatchString(cfg.Stream) {
		return nil, fmt.Errorf("--stream: %q is not a stream name: 1 to 32 letters, digits, _ or -", cfg.Stream)
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.Replicas < 1 || cfg.Replicas > 5 {
		return nil, fmt.Errorf("--stream-replicas: JetStream keeps 1 to 5 replicas, got %d", cfg.Replicas)
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = DefaultDuplicates
	}
	if cfg.Duplicates < time.Second {
		return nil, fmt.Errorf("--stream-duplicates: the duplicate window must be at least 1s, got %s", cfg.Duplicates)
	}
	keys, err := newKeyring(cfg.Keys)
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, log: cfg.Logger, keys: keys}
	if q.log == nil {
		q.log = slog.Default()
	}
	opts := []nats.Option{nats.Name(cfg.Name), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// No buffering while disconnected: a publish fails at once, and
		// its delivery is answered 503, rather than waiting for a reconnect.
		nats.ReconnectBufSize(-1),
		// A refused account keeps being retried (as an unreachable server
		// is): fixing the server's accounts then needs no restart.
		nats.IgnoreAuthErrorAbort(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: Close
				q.log.Warn("NATS connection lost; reconnecting (meanwhile serve answers queued deliveries 503)", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { q.log.Info("NATS connection is back", "server", c.ConnectedUrlRedacted()) })}
	auth, err := authOptions(cfg)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.URL, append(opts, auth...)...)
	if err != nil {
		return nil, fmt.Errorf("--queue %s: %w", Redact(cfg.URL), err)
	}
	q.nc = nc
	if q.js, err = jetstream.New(nc); err != nil {
		nc.Close()
		return nil, err
	}
	return q, nil
}

// Close closes the connection.
func (q *Queue) Close() { q.nc.Close() }

// Stream is the name of the stream of queued deliveries.
func (q *Queue) Stream() string { return q.cfg.Stream }

// DeadStream is the name of the stream of dead letters.
func (q *Queue) DeadStream() string { return q.cfg.Stream + "_DEAD" }

func (q *Queue) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        q.cfg.Stream,
		Description: "Tidemark: deliveries waiting for a worker",
		Subjects:    []string{q.cfg.Stream + ".in.>"},
		// A message leaves the stream when a worker acknowledges it, so
		// what the stream holds is what waits.
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   q.cfg.Replicas,
		Duplicates: q.cfg.Duplicates,
	}
}

func (q *Queue) deadConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        q.DeadStream(),
		Description: "Tidemark: deliveries set aside after failing too often",
		Subjects:    []string{q.cfg.Stream + ".dead.>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    q.cfg.Replicas,
		Duplicates:  q.cfg.Duplicates,
		// Dead letters hold tenants' deliveries: kept no longer than the
		// database keeps them (erasure does not reach the stream).
		MaxAge: q.cfg.DeadMaxAge,
	}
}

// Ensure creates the streams, or for serve (update) applies its settings
// to existing ones.
func (q *Queue) Ensure(ctx context.Context, update bool) error {
	for _, cfg := range []jetstream.StreamConfig{q.streamConfig(), q.deadConfig()} {
		var err error
		if update {
			_, err = q.js.CreateOrUpdateStream(ctx, cfg)
		} else if _, err = q.js.Stream(ctx, cfg.Name); errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = q.js.CreateStream(ctx, cfg)
		}
		if err != nil {
			if last := q.nc.LastError(); last != nil && !errors.Is(err, last) {
				err = fmt.Errorf("%w (the connection's last error: %w)", err, last)
			}
			return fmt.Errorf("stream %s on %s: %w", cfg.Name, Redact(q.cfg.URL), err)
		}
	}
	q.mu.Lock()
	q.ensured = true
	q.mu.Unlock()
	return nil
}

// KeepEnsured runs Ensure until it succeeds, then again whenever a publish
// finds no stream, until ctx ends: serve starts while NATS is down and
// answers 503 until the stream is there.
func (q *Queue) KeepEnsured(ctx context.Context, update bool) {
	wait := 250 * time.Millisecond
	for {
		q.mu.Lock()
		ensured := q.ensured
		q.mu.Unlock()
		if !ensured {
			ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := q.Ensure(ectx, update)
			cancel()
			if err != nil && ctx.Err() == nil {
				q.log.Warn("delivery queue not ready; queued deliveries answer 503 until it is", "err", err)
				wait = min(2*wait, 5*time.Second)
			} else {
				wait = 250 * time.Millisecond
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// partition is the partition of a tenant's deliveries.
func partition(tenantID int64) int { return int(uint64(tenantID) % Partitions) }

// subject is where a tenant's deliveries are published.
func (q *Queue) subject(tenantID int64) string {
	return q.cfg.Stream + ".in." + strconv.Itoa(partition(tenantID)) + "." + strconv.FormatInt(tenantID, 10)
}

// Header names of a queued message, besides Nats-Msg-Id (the identity).
const (
	headerDelivery = "Tidemark-Delivery-Id"
	headerReason   = "Tidemark-Dead-Reason"
	headerAttempts = "Tidemark-Attempts"
)

// unavailable wraps err as the EUNAVAILABLE error the receiver answers 503.
func unavailable(err error) error {
	return fmt.Errorf("%w: %w", domain.Errorf(domain.EUNAVAILABLE, "the delivery queue is unavailable, retry later"), err)
}

// Enqueue implements domain.DeliveryQueue: it publishes qd with its
// identity as Nats-Msg-Id and returns once JetStream acknowledged it.
func (q *Queue) Enqueue(ctx context.Context, qd domain.QueuedDelivery) (bool, error) {
	data, err := encode(qd)
	if err != nil {
		return false, err
	}
	msg := q.keys.seal(q.subject(qd.Delivery.TenantID), claimOf(qd), data)
	if limit := q.nc.MaxPayload(); limit > 0 && int64(len(msg.Data)) > limit {
		return false, domain.Errorf(domain.EUNAVAILABLE, "the queued delivery takes %d bytes, more than the NATS server's max_payload "+
			"of %d; raise max_payload in the server's configuration", len(msg.Data), limit)
	}
	msg.Header.Set(headerDelivery, qd.Delivery.ID)
	ack, err := q.js.PublishMsg(ctx, msg, jetstream.WithMsgID(qd.Identity), jetstream.WithExpectStream(q.cfg.Stream))
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			q.mu.Lock()
			q.ensured = false // KeepEnsured creates it again
			q.mu.Unlock()
		}
		return false, unavailable(err)
	}
	return ack.Duplicate, nil
}

// State implements domain.DeliveryQueue.
func (q *Queue) State(ctx context.Context, tenantID int64) (domain.QueueState, error) {
	var st domain.QueueState
	s, err := q.js.Stream(ctx, q.cfg.Stream)
	if err != nil {
		return st, unavailable(err)
	}
	if tenantID == 0 {
		info := s.CachedInfo()
		st.Depth = int64(info.State.Msgs)
		if st.Depth > 0 {
			st.Oldest = info.State.FirstTime
		}
		dead, err := q.js.Stream(ctx, q.DeadStream())
		if err != nil {
			return st, unavailable(err)
		}
		st.DeadLetters = int64(dead.CachedInfo().State.Msgs)
		return st, nil
	}
	subject := q.subject(tenantID)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return st, unavailable(err)
	}
	st.Depth = int64(info.State.Subjects[subject])
	if st.Depth > 0 {
		first, err := s.GetMsg(ctx, info.State.FirstSeq, jetstream.WithGetMsgSubject(subject))
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return st, unavailable(err)
		}
		if first != nil {
			st.Oldest = first.Time
		}
	}
	return st, nil
}
