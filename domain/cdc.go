package domain

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Change Data Capture (docs/contract/cdc.md): a Salesforce provider with a
// connected app subscribes to its org's change events over the Pub/Sub
// API and writes them as deliveries whose source is SourceCDC. The replay
// id of the last event written moves in the transaction of that event's
// delivery, so that a restarted or taken-over subscriber resumes from it:
// nothing is skipped, nothing applied twice.

// SourceCDC is the source of a delivery Tidemark made of change events it
// read from the provider's Change Data Capture stream.
const SourceCDC = "cdc"

// DefaultCDCChannel is the channel of every entity selected for Change
// Data Capture in the org.
const DefaultCDCChannel = "/data/ChangeEvents"

// DefaultPubSubAddress is Salesforce's Pub/Sub API, host and port, that a
// stream without its own address subscribes to.
const DefaultPubSubAddress = "api.pubsub.salesforce.com:7443"

// CDCConfig is how a provider's stream is set up.
type CDCConfig struct {
	Enabled bool
	Channel string // DefaultCDCChannel, /data/<Name>__chn or /data/<Entity>ChangeEvent
	// PubSubAddress is the Pub/Sub API's host:port; "" for
	// DefaultPubSubAddress. Another exists for tests.
	PubSubAddress string
	// AllowPrivate lets PubSubAddress be a loopback or private address:
	// the command line's choice alone.
	AllowPrivate bool
}

// cdcChannelPattern is a custom channel (/data/Sales__chn) or a single
// entity's (/data/ContactChangeEvent, /data/Invoice__ChangeEvent).
var cdcChannelPattern = regexp.MustCompile(`^/data/(?:[A-Za-z][A-Za-z0-9_]{0,79}__chn|[A-Za-z][A-Za-z0-9_]{0,79}ChangeEvent)$`)

// Check returns c completed (the default channel) or an EINVALID error
// naming what is wrong.
func (c CDCConfig) Check() (CDCConfig, error) {
	c.Channel, c.PubSubAddress = strings.TrimSpace(c.Channel), strings.TrimSpace(c.PubSubAddress)
	if c.Channel == "" {
		c.Channel = DefaultCDCChannel
	}
	if c.Channel != DefaultCDCChannel && !cdcChannelPattern.MatchString(c.Channel) {
		return c, Errorf(EINVALID, "the channel must be %s, /data/<Name>__chn (a custom channel) or "+
			"/data/<Entity>ChangeEvent (one entity's), got %q", DefaultCDCChannel, c.Channel)
	}
	if c.PubSubAddress != "" {
		host, port, err := net.SplitHostPort(c.PubSubAddress)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, "/@ ") {
			return c, Errorf(EINVALID, "the Pub/Sub address must be host:port, such as %s", DefaultPubSubAddress)
		}
	}
	return c, nil
}

// Address is the Pub/Sub API the stream subscribes to.
func (c CDCConfig) Address() string {
	if c.PubSubAddress == "" {
		return DefaultPubSubAddress
	}
	return c.PubSubAddress
}

// CDCStream is a provider's stream: its setup and where it was read to.
type CDCStream struct {
	TenantID, ProviderID int64
	CDCConfig
	// ReplayID is the last event's written, opaque; nil before the first
	// and after a corrupted one was cleared.
	ReplayID []byte
	// CommittedAt is when that event's transaction committed at the
	// provider; zero before the first.
	CommittedAt time.Time
	MovedAt     time.Time // when ReplayID last moved; zero before
	// Events, GapsRepaired, Overflows and CorruptedReplays count what the
	// stream brought: change events written, gap events whose records
	// were read again, overflows backfilled, replay ids refused.
	Events, GapsRepaired, Overflows, CorruptedReplays int64
	// MinuteStart, MinuteEvents and PreviousMinuteEvents count events by
	// minute, for EventsPerMinute.
	MinuteStart                        time.Time
	MinuteEvents, PreviousMinuteEvents int64
	LastError                          string
	LastErrorAt                        time.Time
	LeasedBy                           string // the subscriber's node; "" when none holds it
	LeaseUntil                         time.Time
	// Allocation is the org's daily event delivery allocation as the
	// subscriber last read it; zero before.
	Allocation CDCAllocation
}

// CDCAllocation is an org's event delivery allocation over the last 24
// hours (Salesforce's limits resource, DailyDeliveredPlatformEvents): what
// every Pub/Sub API and CometD client of the org may be delivered, change
// events and high-volume platform events together.
type CDCAllocation struct {
	Max, Remaining int64
	At             time.Time // when it was read
}

// Used is the share of the allocation used, from 0 to 1; false before it
// was read or when it has no maximum.
func (a CDCAllocation) Used() (float64, bool) {
	if a.At.IsZero() || a.Max <= 0 {
		return 0, false
	}
	return float64(max(a.Max-a.Remaining, 0)) / float64(a.Max), true
}

// Subscribed reports whether a subscriber holds the stream at now.
func (s CDCStream) Subscribed(now time.Time) bool {
	return s.LeasedBy != "" && s.LeaseUntil.After(now)
}

// ReplayAge is how far behind the stream's position is at now: now less
// the commit time of the last event written; false before the first.
func (s CDCStream) ReplayAge(now time.Time) (time.Duration, bool) {
	if s.CommittedAt.IsZero() {
		return 0, false
	}
	return max(now.Sub(s.CommittedAt), 0), true
}

// EventsPerMinute estimates the rate at now from the two minute counts: the
// current minute's events and the share of the previous minute's that a
// sliding minute still covers.
func (s CDCStream) EventsPerMinute(now time.Time) float64 {
	if s.MinuteStart.IsZero() {
		return 0
	}
	elapsed := now.Sub(s.MinuteStart)
	switch {
	case elapsed >= 2*time.Minute:
		return 0
	case elapsed >= time.Minute: // the counted minute is the previous one now
		return float64(s.MinuteEvents) * (1 - float64(elapsed-time.Minute)/float64(time.Minute))
	}
	return float64(s.MinuteEvents) + float64(s.PreviousMinuteEvents)*(1-float64(max(elapsed, 0))/float64(time.Minute))
}

// CDCStreamRef names a stream that is on, for the subscribers to find.
type CDCStreamRef struct {
	TenantID, ProviderID int64
	TenantSlug, Provider string
}

// CDCMove is a delivery's move of a stream's replay id: From the one the
// events were read after (nil when none was committed), To the last
// event's, CommittedAt its commit time at the provider.
type CDCMove struct {
	TenantID, ProviderID int64
	From, To             []byte
	CommittedAt          time.Time
	// Events is the change events the delivery holds (a merged event is
	// one); GapsRepaired and Overflows those of them that were gap events
	// whose records were read again, and overflows backfilled.
	Events, GapsRepaired, Overflows int
}

// CDCReset clears a replay id the provider no longer knows, after the
// window it covered was backfilled.
type CDCReset struct {
	TenantID, ProviderID int64
	From                 []byte // the refused replay id
	Target, Summary      string // the audit entry's: the provider, what happened
}

// ErrCDCMoved is a move whose From is no longer the stream's replay id:
// another subscriber wrote these events first. The delivery was rolled
// back; the subscriber reads the stream again.
var ErrCDCMoved = errors.New("the stream's replay id moved meanwhile: another subscriber wrote these events")

// AuditCDCReplayReset is audited in the tenant's log when a stream's
// replay id was refused by the provider and cleared.
const AuditCDCReplayReset = "cdc_replay_reset"

// CDCService keeps the providers' streams.
type CDCService interface {
	// SetCDC sets the provider's stream up as c (checked by Check),
	// keeping its position unless the channel changed, and audits what
	// changed as provider_update. EINVALID when turned on without
	// connected app credentials; ENOTFOUND without such a provider.
	SetCDC(ctx context.Context, tenantID, providerID int64, c CDCConfig) (CDCStream, error)
	// CDCStream returns the provider's stream; false when it was never
	// set up.
	CDCStream(ctx context.Context, tenantID, providerID int64) (CDCStream, bool, error)
	// EnabledCDCStreams lists the streams that are on, across tenants,
	// by tenant and provider: what the subscribers of the nodes share.
	EnabledCDCStreams(ctx context.Context) ([]CDCStreamRef, error)
	// LeaseCDC takes, for holder, the provider's stream when it is on for
	// ttl, and returns it; false when it is off or another holder's lease
	// runs still. A holder may take its own lease again.
	LeaseCDC(ctx context.Context, tenantID, providerID int64, holder string, ttl time.Duration) (CDCStream, bool, error)
	// ReleaseCDC gives holder's lease back.
	ReleaseCDC(ctx context.Context, tenantID, providerID int64, holder string) error
	// IngestCDC writes the events' delivery as Ingest does and, in its
	// transaction, moves the replay id from m.From to m.To, adding to the
	// stream's counts. An error wrapping ErrCDCMoved when the replay id is
	// no longer m.From: nothing is written.
	IngestCDC(ctx context.Context, d Delivery, p ProviderEndpoint, events []Event, m CDCMove) ([]Result, error)
	// RecordCDCAllocation keeps the org's delivery allocation as read now.
	RecordCDCAllocation(ctx context.Context, tenantID, providerID int64, a CDCAllocation) error
	// RecordCDCError keeps the stream's last error, with its time.
	RecordCDCError(ctx context.Context, tenantID, providerID int64, message string) error
	// ResetCDC clears a replay id the provider refused (ErrCDCMoved when
	// it is no longer r.From), counts it and audits it.
	ResetCDC(ctx context.Context, r CDCReset) error
}
