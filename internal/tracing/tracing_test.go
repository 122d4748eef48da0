package tracing

import (
	"context"
	"strings"
	"testing"
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
	})
	if allocs != 0 {
		t.Errorf("%v allocations a span with tracing off, want 0", allocs)
	}
}
