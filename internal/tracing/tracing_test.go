package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/domain"
)

// TestSetupFromEnvironment: tracing is off unless an OTLP endpoint or an
// exporter is named; none and OTEL_SDK_DISABLED turn it off; an exporter
// or protocol Tidemark does not support is an error naming the variable.
func TestSetupFromEnvironment(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "OTEL_TRACES_EXPORTER"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		shutdown, on, err := Setup(context.Background(), Config{Getenv: func(k string) string { return c.env[k] },
			Console: &strings.Builder{}})
		if on != c.on || Enabled() != c.on || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%v: on %v (Enabled %v), err %v; want on %v, error naming %q", c.env, on, Enabled(), err, c.on, c.wantErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		shutdown(ctx)
		cancel()
		if Enabled() {
			t.Fatalf("%v: still on after shutdown", c.env)
		}
	}
}

// TestOffCostsNothing: with tracing off, opening and closing a span,
// noting a delivery and checking whether to record allocate nothing.
func TestOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := Start(ctx, "parse")
		NoteEndpoint(c, "acme", "crm", "standard", "id")
		if span.IsRecording() {
			t.Fatal("a span recorded with tracing off")
		}
		span.End()
		_, root := StartRoot(ctx, "cleanup")
		Fail(root, "x")
		root.End()
		Step(ctx, "authenticate", func(ctx context.Context) error {
			NoteEvents(ctx, 1)
			return nil
		})
	})
	if allocs != 0 {
		t.Errorf("%v allocations a span with tracing off, want 0", allocs)
	}
}

// TestStep: a step is a child span of its context's, ended when its
// function returns; a failed step records the class Classed gave its
// error, or the error's domain code, and never the message.
func TestStep(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer Use(tp)()
	ctx, root := Start(context.Background(), "POST")
	secret := errors.New("bad signature over a body quoting pat@example.com")
	steps := []struct {
		name  string
		err   error
		class string
	}{
		{"authenticate", Classed("invalid", secret), "invalid"},
		{"classed wrapped", fmt.Errorf("step: %w", Classed("unparsable", secret)), "unparsable"},
		{"parse", nil, ""},
		{"commit", domain.Errorf(domain.EUNAVAILABLE, "down"), domain.EUNAVAILABLE},
		{"respond", secret, domain.EINTERNAL},
	}
	for _, s := range steps {
		err := Step(ctx, s.name, func(ctx context.Context) error {
			if trace.SpanFromContext(ctx).SpanContext().SpanID() == root.SpanContext().SpanID() {
				t.Errorf("%s: fn was given the parent's context", s.name)
			}
			NoteEvents(ctx, 2)
			return s.err
		})
		if err != s.err {
			t.Errorf("%s: Step returned %v, want fn's %v", s.name, err, s.err)
		}
	}
	if got := Classed("invalid", secret).Error(); got != secret.Error() {
		t.Errorf("Classed's message %q, want its error's %q", got, secret)
	}
	root.End()
	ended := rec.Ended()
	if len(ended) != len(steps)+1 {
		t.Fatalf("%d spans ended, want %d", len(ended), len(steps)+1)
	}
	for i, s := range steps {
		span := ended[i]
		attrs := map[string]string{}
		for _, kv := range span.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		wantStatus := codes.Unset
		if s.class != "" {
			wantStatus = codes.Error
		}
		if span.Name() != s.name || span.Parent().SpanID() != root.SpanContext().SpanID() ||
			attrs["error.type"] != s.class || span.Status().Code != wantStatus || span.Status().Description != s.class ||
			attrs["tidemark.events"] != "2" {
			t.Errorf("span %q: parent %s, attributes %v, status %v; want %q under the root, error.type and status %q",
				span.Name(), span.Parent().SpanID(), attrs, span.Status(), s.name, s.class)
		}
	}
}
