package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// Replays re-run a stored delivery through the webhook's own parsing
// (parseEvents, with today's provider settings and scopes) and ingest, as a
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

// replay replays orig: by hand when step is nil (recorded in the audit
// log with the actor of ctx), else as one step of a bulk job. It returns
// the new delivery's id and the outcomes.
func (s *Server) replay(ctx context.Context, orig domain.DeliveryDetail, step *domain.ReplayStep) (string, []domain.Result, error) {
	if err := orig.Replayable(); err != nil {
		return "", nil, err
	}
	p, err := s.ingest.Endpoint(ctx, orig.TenantSlug, orig.Provider)
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
	events, err := parseEvents(kind, r, orig.Body, p)
	if err != nil {
		return "", nil, &unparsableError{err}
	}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
		ReceivedAt: s.now(), Status: http.StatusOK, Signature: orig.Signature, Body: orig.Body,
		Request: orig.Request, ReplayOf: orig.ID}
	var results []domain.Result
	if step == nil {
		results, err = s.replays.Replay(ctx, d, p, events)
	} else {
		results, err = s.replays.ReplayStep(ctx, *step, d, p, events)
	}
	var invalid *domain.Error
	if errors.As(err, &invalid) && invalid.Code == domain.EINVALID {
		// A value PostgreSQL cannot store: the webhook would answer 400.
		return "", nil, &unparsableError{errors.New(invalid.Message)}
	}
	if err != nil {
		return "", nil, err
	}
	s.countEvents(p.Kind, results)
	return d.ID, results, nil
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
