// Package tracing is Tidemark's OpenTelemetry tracing: Setup configures
// the official SDK from the standard OTEL_* environment variables, and
// Start and StartRoot open spans; Step runs a function as a span it opens
// and closes. Tracing is off unless the environment names an exporter;
// off, Start returns its context unchanged with a span that records
// nothing, without allocating, so the hot path pays nothing.
//
// Spans carry identifiers and counts only (tenant slug, provider name,
// delivery id, outcome counts, group sizes): never a body, a secret, a
// signature, a header, a query or an error message, which can quote data.
package tracing

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
)

// ScopeName is the instrumentation scope of Tidemark's spans.
const ScopeName = "github.com/tidemark/tidemark"

// The attributes Tidemark's spans carry. Names follow OpenTelemetry's
// semantic conventions where one exists.
const (
	AttrTenant     = attribute.Key("tidemark.tenant")
	AttrProvider   = attribute.Key("tidemark.provider")
	AttrKind       = attribute.Key("tidemark.provider.kind")
	AttrDelivery   = attribute.Key("tidemark.delivery.id")
	AttrEvents     = attribute.Key("tidemark.events")
	AttrGroupSize  = attribute.Key("tidemark.group.size")
	AttrGroupRound = attribute.Key("tidemark.group.rounds")
	AttrLeader     = attribute.Key("tidemark.group.leader")
	AttrBatchSize  = attribute.Key("db.operation.batch.size")
	AttrDBSystem   = attribute.Key("db.system.name")
	AttrDBOp       = attribute.Key("db.operation.name")
	AttrErrorType  = attribute.Key("error.type")
)

// state is the tracer in use; nil while tracing is off.
var state atomic.Pointer[tracer]

type tracer struct {
	t trace.Tracer
}

// traceContext reads and writes W3C traceparent and tracestate headers.
var traceContext = propagation.TraceContext{}

// none is the span of a context without one: it records nothing.
var none = trace.SpanFromContext(context.Background())

// Enabled reports whether spans are recorded and exported.
func Enabled() bool { return state.Load() != nil }

// Use makes tp the provider of Tidemark's spans, nil turning tracing off,
// and returns a function that restores the one before (for tests).
func Use(tp trace.TracerProvider) (restore func()) {
	var next *tracer
	if tp != nil {
		next = &tracer{t: tp.Tracer(ScopeName)}
	}
	before := state.Swap(next)
	return func() { state.Store(before) }
}

// Start opens a span named name, a child of ctx's span (a root when ctx
// has none). Off, it returns ctx and a span that records nothing.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := state.Load()
	if s == nil {
		return ctx, none
	}
	return s.t.Start(ctx, name, opts...)
}

// StartRoot opens a span named name that starts a trace of its own, whatever
// ctx's span: a background pass, a replay, a destination's send. When ctx
// has a span (the API call that started a replay), the new one links to it.
func StartRoot(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := state.Load()
	if s == nil {
		return ctx, none
	}
	opts = append(opts, trace.WithNewRoot())
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return s.t.Start(ctx, name, opts...)
}

// Step runs fn as a span named name, a child of ctx's span, and passes fn
// the span's context. An error fn returns marks the span failed with the
// error's class: the one Classed gave it, else its domain error code.
func Step(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	ctx, span := Start(ctx, name)
	defer span.End()
	err := fn(ctx)
	if err != nil {
		Fail(span, classOf(err))
	}
	return err
}

// Classed is err with the class a failed Step's span records (such as a
// signature verdict); its message stays err's.
func Classed(class string, err error) error { return &classedError{class: class, err: err} }

type classedError struct {
	class string
	err   error
}

func (e *classedError) Error() string { return e.err.Error() }
func (e *classedError) Unwrap() error { return e.err }

// classOf is err's class on a span: Classed's, else its domain error code.
func classOf(err error) string {
	var c *classedError
	if errors.As(err, &c) {
		return c.class
	}
	return domain.ErrorCode(err)
}

// Extract returns ctx continuing the trace named by h's traceparent, when
// it has a valid one and tracing is on.
func Extract(ctx context.Context, h http.Header) context.Context {
	if state.Load() == nil || h.Get("Traceparent") == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.HeaderCarrier(h))
}

// Fail marks span as failed with a class of error (such as a domain error
// code), never the error's message: messages can quote stored data.
func Fail(span trace.Span, class string) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(AttrErrorType.String(class))
	span.SetStatus(codes.Error, class)
}

// NoteEndpoint records a delivery's tenant, provider and id on ctx's span.
func NoteEndpoint(ctx context.Context, tenant, providerName, kind, deliveryID string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{AttrTenant.String(tenant), AttrProvider.String(providerName), AttrKind.String(kind),
		AttrDelivery.String(deliveryID)}
	if deliveryID == "" {
		attrs = attrs[:3]
	}
	span.SetAttributes(attrs...)
}

// NoteEvents records on ctx's span how many events a delivery holds.
func NoteEvents(ctx context.Context, n int) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrEvents.Int(n))
	}
}

// NoteOutcomes records on span how many events had each outcome, as
// tidemark.outcome.<outcome> attributes (outcomes are a fixed list of
// machine names), and the number of events.
func NoteOutcomes(span trace.Span, results []domain.Result) {
	if !span.IsRecording() {
		return
	}
	counts := map[string]int{}
	for _, r := range results {
		counts[string(r.Outcome)]++
	}
	attrs := make([]attribute.KeyValue, 0, len(counts)+1)
	attrs = append(attrs, AttrEvents.Int(len(results)))
	for o, n := range counts {
		attrs = append(attrs, attribute.Int("tidemark.outcome."+o, n))
	}
	span.SetAttributes(attrs...)
}
