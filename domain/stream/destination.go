package stream

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Destinations receive a tenant's changes as they commit: each change a
// destination selects is POSTed as a Standard Webhooks message (or
// published to NATS JetStream), retried until answered 2xx, one change of
// a record at a time (docs/contract/destinations.md).

// Destination statuses.
const (
	DestinationActive  = "active"
	DestinationPaused  = "paused"  // by an owner
	DestinationFailing = "failing" // paused after failing for DestinationGiveUp
)

// Sending rules of every destination.
const (
	DestinationTimeout     = 10 * time.Second // for an answer to one message
	DestinationFirstRetry  = 2 * time.Second  // the first backoff; each next one doubles
	DestinationMaxBackoff  = 10 * time.Minute
	DestinationGiveUp      = 72 * time.Hour // failing this long pauses the destination as failing
	DefaultMaxInFlight     = 8              // changes in flight per destination, on different records
	MaxMaxInFlight         = 64
	DestinationSecretGrace = 24 * time.Hour // a rotated-out secret still signs this long
)

// DefaultDestinationTypes is what a destination receives when it names no
// types; a slack destination's default is DefaultSlackTypes.
var (
	DefaultDestinationTypes = []string{"record.*"}
	DefaultSlackTypes       = []string{AlertTypesPattern}
)

// Destination is where a tenant's changes are pushed.
type Destination struct {
	TenantID   int64
	ID         int64
	Kind       string // how it is sent to: a kind of internal/sink
	URL        string // an http(s) URL, or empty for NATS
	NATSURL    string // a NATS server, with Subject the subject prefix
	Subject    string
	Provider   string   // only this provider's changes, when set
	ObjectType string   // only this object type's, when set
	Types      []string // record and alert type patterns
	Format     string   // FormatStandard or FormatSlack: the body of alert messages
	// Filter and Transform are CEL expressions (internal/shape), "" for
	// none: which messages are sent, and the data a change's message
	// carries instead of the change.
	Filter, Transform string
	AllowPrivate      bool
	// NATSAuth says how a NATS destination connects: NATSAuthCreds,
	// NATSAuthNKey, or "" without credentials; NATSTLSCA whether it checks
	// the server's certificate against its own certificate authorities.
	// The credentials themselves are never read back.
	NATSAuth     string
	NATSTLSCA    bool
	MaxInFlight  int
	Status       string
	StatusReason string
	Cursor       int64 // the feed position taken into its queue
	// BehindRetention: changes after the cursor were removed by the feed's
	// retention while the destination was paused or failing; they are
	// never sent.
	BehindRetention bool
	// Filtered counts the changes and alert events its filter passed over.
	Filtered    int64
	CreatedAt   time.Time
	LastSuccess *time.Time
	// Pending counts the changes taken but not yet answered 2xx; Oldest is
	// the commit time of the oldest of them, nil when none (the lag).
	Pending int
	Oldest  *time.Time
}

// Target is where the destination sends, for lists and logs: its URL,
// and the subjects it publishes on when it has a subject prefix.
func (d Destination) Target() string {
	return d.endpoint() + d.subjects()
}

// endpoint is the URL the destination sends to (one of URL and NATSURL
// is set, as its kind says).
func (d Destination) endpoint() string { return cmp.Or(d.URL, d.NATSURL) }

func (d Destination) subjects() string {
	if d.Subject == "" {
		return ""
	}
	return " " + d.Subject + ".>"
}

// NewDestination is what an owner gives to create a destination.
type NewDestination struct {
	Kind       string // "": the kind the fields imply (internal/sink)
	URL        string
	NATSURL    string
	Subject    string
	Provider   string
	ObjectType string
	Types      []string
	Format     string // "": FormatStandard
	// Filter and Transform are CEL expressions, "" for none
	// (internal/shape checks them).
	Filter, Transform string
	AllowPrivate      bool // only the CLI sets it
	MaxInFlight       int  // 0: DefaultMaxInFlight
	// NATS is what a NATS destination connects with: required unless
	// AllowPrivate (Check).
	NATS NATSAuth
}

// NATSAuth is what a NATS destination connects to its server with, stored
// encrypted like its signing secret: a credentials file (a user JWT and
// its nkey seed, NATS's decentralized authentication) or an nkey seed, and
// the certificate authorities (PEM) its server's TLS certificate is
// checked against, when not the system's.
type NATSAuth struct {
	Creds string // the text of a .creds file
	NKey  string // a user nkey seed, SU...
	TLSCA string // PEM certificates
}

// The kinds of NATS credentials (Destination.NATSAuth).
const (
	NATSAuthCreds = "creds"
	NATSAuthNKey  = "nkey"
)

// Kind is NATSAuthCreds, NATSAuthNKey or "" for none.
func (a NATSAuth) Kind() string {
	switch {
	case a.Creds != "":
		return NATSAuthCreds
	case a.NKey != "":
		return NATSAuthNKey
	}
	return ""
}

// IsZero reports whether a holds nothing.
func (a NATSAuth) IsZero() bool { return a == NATSAuth{} }

// DestinationAttempt is one attempt to deliver a change or an alert event
// (IsAlertQueuePosition(Position)).
type DestinationAttempt struct {
	Position int64
	ChangeID string // the message's webhook-id: a change's id or an alert event's
	Type     string // the change's or alert event's type; "" once it is gone
	At       time.Time
	Status   int // the HTTP status; 0 when there was no answer
	Error    string
	Duration time.Duration
}

// Delivered reports whether the attempt delivered its change.
func (a DestinationAttempt) Delivered() bool { return a.Status >= 200 && a.Status < 300 }

// Audit actions of destinations.
const (
	AuditDestinationCreate = "destination_create"
	AuditDestinationRotate = "destination_rotate"
	AuditDestinationPause  = "destination_pause"
	AuditDestinationResume = "destination_resume"
	AuditDestinationRewind = "destination_rewind"
	AuditDestinationDelete = "destination_delete"
	AuditDestinationUpdate = "destination_update"
)

// DestinationUpdate is what an owner changes of a destination: each field
// set is changed, "" removing the expression; nil leaves it.
type DestinationUpdate struct {
	Filter, Transform *string
}

// IsZero reports whether u changes nothing.
func (u DestinationUpdate) IsZero() bool { return u.Filter == nil && u.Transform == nil }

// DestinationService manages a tenant's destinations. Every state change is
// audited with the actor of ctx.
type DestinationService interface {
	// CreateDestination stores a destination and returns it with its
	// signing secret, shown this once.
	CreateDestination(ctx context.Context, tenantID int64, nd NewDestination) (Destination, string, error)
	Destinations(ctx context.Context, tenantID int64) ([]Destination, error)
	Destination(ctx context.Context, tenantID, id int64) (Destination, error)
	// RotateDestinationSecret returns a new secret; the previous one still
	// signs for DestinationSecretGrace.
	RotateDestinationSecret(ctx context.Context, tenantID, id int64) (string, error)
	// UpdateDestination changes a destination's filter and transform,
	// checked first (EINVALID, changing nothing), and returns it.
	UpdateDestination(ctx context.Context, tenantID, id int64, u DestinationUpdate) (Destination, error)
	PauseDestination(ctx context.Context, tenantID, id int64) error
	// ResumeDestination resumes a paused or failing destination; its
	// pending changes are retried at once.
	ResumeDestination(ctx context.Context, tenantID, id int64) error
	// RewindDestination sends again every change after position: the queue
	// is emptied and the cursor set there.
	RewindDestination(ctx context.Context, tenantID, id, position int64) error
	DeleteDestination(ctx context.Context, tenantID, id int64) error
	// DestinationAttempts lists attempts, newest first.
	DestinationAttempts(ctx context.Context, tenantID, id int64, page domain.Page) ([]DestinationAttempt, string, error)
}

// CheckTypes validates a destination's type patterns: a change type, an
// alert event type, or a family with ".*" (record.*, alert.*).
func CheckTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return DefaultDestinationTypes, nil
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		t = strings.TrimSpace(t)
		if !knownTypePattern(t) && !isAlertTypePattern(t) {
			return nil, domain.Errorf(domain.EINVALID, "types: %q is not a change type (record.applied, record.deleted, record.reset, record.erased) or record.*, nor an alert type (alert.fired, alert.resolved) or alert.*", t)
		}
		out = append(out, t)
	}
	return out, nil
}

func knownTypePattern(t string) bool {
	if t == "record.*" {
		return true
	}
	for _, ct := range ChangeTypes {
		if string(ct) == t {
			return true
		}
	}
	return false
}

// Backoff is the wait before attempt n+1 of a change after n failed
// attempts: DestinationFirstRetry doubled each time, at most
// DestinationMaxBackoff, and never less than retryAfter (the answer's
// Retry-After, 0 when none).
func Backoff(n int, retryAfter time.Duration) time.Duration {
	d := DestinationFirstRetry
	for i := 1; i < n && d < DestinationMaxBackoff; i++ {
		d *= 2
	}
	d = min(d, DestinationMaxBackoff)
	return max(d, min(retryAfter, time.Hour))
}

// DestinationLabel names a destination in logs and the audit log.
func DestinationLabel(id int64) string { return fmt.Sprintf("destination %d", id) }
