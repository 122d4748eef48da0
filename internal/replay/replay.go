// Package replay re-runs stored deliveries: one by hand (the API and the
// console) or many as bulk jobs (Worker). It is not HTTP work; it rebuilds
// the stored request only because the kinds' parsers read one.
package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/tracing"
)

// Replays re-run a stored delivery through the webhook's own parsing
// (provider.Parse, with today's provider settings and scopes) and ingest, as a
// new delivery naming the original. The signature and timestamp are not
// checked again: they were on arrival, and the stored headers are
// redacted. Redaction never touches what parsing reads (an event id, a
// content type), only credentials.

// unparsableError is a stored body that today's parser refuses: the
// replay stores nothing.
type unparsableError struct{ err error }

func (e *unparsableError) Error() string { return e.err.Error() }

// Unwrap makes it ECONFLICT: the delivery is fine, today's parser is not.
func (e *unparsableError) Unwrap() error {
	return domain.Errorf(domain.ECONFLICT, "the stored body cannot be parsed by today's receiver: %v", e.err)
}

// Replayer replays stored deliveries as new deliveries naming them.
type Replayer struct {
	endpoints Endpoints
	replays   domain.ReplayService
	now       func() time.Time
	counted   func(kind string, results []domain.Result)
	manual    budgets // replays by hand, per tenant
}

// Endpoints finds a provider's endpoint as the webhook does
// (domain.IngestService has it).
type Endpoints interface {
	Endpoint(ctx context.Context, tenant, provider string) (domain.ProviderEndpoint, error)
}

// New returns a Replayer that stores replays through replays and reports
// each one's outcomes to counted (the webhook's metrics), when not nil. A
// nil now means time.Now.
func New(endpoints Endpoints, replays domain.ReplayService, now func() time.Time,
	counted func(kind string, results []domain.Result)) *Replayer {
	if now == nil {
		now = time.Now
	}
	if counted == nil {
		counted = func(string, []domain.Result) {}
	}
	return &Replayer{endpoints: endpoints, replays: replays, now: now, counted: counted}
}

// Replay replays orig by hand, recorded in the audit log with the actor of
// ctx. It returns the new delivery's id and the outcomes; a body today's
// parser refuses is an ECONFLICT error, and a tenant past ManualPerMinute
// a *LimitedError.
func (rp *Replayer) Replay(ctx context.Context, orig domain.DeliveryDetail) (string, []domain.Result, error) {
	if err := orig.Replayable(); err != nil {
		return "", nil, err
	}
	if wait, ok := rp.manual.take(orig.TenantSlug, rp.now()); !ok {
		return "", nil, &LimitedError{Wait: wait}
	}
	return rp.replay(ctx, orig, nil)
}

// replay replays orig: by hand when step is nil, else as one step of a
// bulk job.
func (rp *Replayer) replay(ctx context.Context, orig domain.DeliveryDetail, step *domain.ReplayStep) (id string, results []domain.Result, err error) {
	if err := orig.Replayable(); err != nil {
		return "", nil, err
	}
	// Each replay is a trace of its own, linked to the request that asked
	// for it.
	ctx, span := tracing.StartRoot(ctx, "replay", trace.WithAttributes(attribute.String("tidemark.replay_of", orig.ID)))
	defer func() {
		if err != nil {
			tracing.Fail(span, replayFailure(err))
		}
		tracing.NoteOutcomes(span, results)
		span.End()
	}()
	p, err := rp.endpoints.Endpoint(ctx, orig.TenantSlug, orig.Provider)
	if err != nil {
		return "", nil, err
	}
	kind, ok := provider.Lookup(p.Kind)
	if !ok {
		return "", nil, domain.Errorf(domain.ECONFLICT, "provider kind %q is not supported by this version of Tidemark", p.Kind)
	}
	r, err := storedRequest(ctx, orig)
	if err != nil {
		return "", nil, &unparsableError{err}
	}
	events, err := provider.Parse(kind, r, orig.Body, p)
	if err != nil {
		return "", nil, &unparsableError{err}
	}
	// No Body: a replay refers to its original's (ReplayOf), so that
	// replays cannot copy bodies onto the disk; nor do its events that
	// change nothing copy their original's payloads (ReplayOfAt).
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: rp.now(), Status: http.StatusOK, Signature: orig.Signature,
		Request: orig.Request, ReplayOf: orig.ID, ReplayOfAt: orig.ReceivedAt}
	tracing.NoteEndpoint(ctx, p.TenantSlug, p.Name, p.Kind, d.ID)
	if step == nil {
		results, err = rp.replays.Replay(ctx, d, p, events)
	} else {
		results, err = rp.replays.ReplayStep(ctx, *step, d, p, events)
	}
	var invalid *domain.Error
	if errors.As(err, &invalid) && invalid.Code == domain.EINVALID {
		// A value PostgreSQL cannot store: the webhook would answer 400.
		return "", nil, &unparsableError{errors.New(invalid.Message)}
	}
	if err != nil {
		return "", nil, err
	}
	rp.counted(p.Kind, results)
	return d.ID, results, nil
}

// replayFailure is the class of a replay's error on its span.
func replayFailure(err error) string {
	var unparsable *unparsableError
	if errors.As(err, &unparsable) {
		return "unparsable"
	}
	return domain.ErrorCode(err)
}

// storedRequest rebuilds the request a delivery arrived with, as far as
// the delivery log kept it, for the kind's parser.
func storedRequest(ctx context.Context, d domain.DeliveryDetail) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, d.Request.Method, "/", bytes.NewReader(d.Body))
	if err != nil {
		return nil, fmt.Errorf("stored request: %w", err)
	}
	r.URL.Path, r.URL.RawQuery, r.RequestURI = d.Request.Path, d.Request.Query, ""
	r.Header = http.Header{}
	for name, values := range d.Request.Headers {
		r.Header[name] = values
	}
	r.RemoteAddr = net.JoinHostPort(d.Request.ClientAddress, "0")
	return r, nil
}
