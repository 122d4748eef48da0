package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is what Setup reads: the environment (os.Getenv in a node) and
// where the console exporter writes.
type Config struct {
	Getenv  func(string) string
	Console io.Writer
	// Service is the default service.name; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES win.
	Service string
}

// Setup turns tracing on when the environment asks for it, following the
// OpenTelemetry specification's variables:
//
//   - OTEL_TRACES_EXPORTER: otlp or console (a comma-separated list); none,
//     or OTEL_SDK_DISABLED=true, is off. Unset, tracing is on (otlp) when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set, off otherwise.
//   - OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL: http/protobuf (the default) or
//     grpc.
//
// The rest (endpoint, headers, timeout, compression, certificates,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES) the SDK
// reads from the process's environment itself. Setup returns what flushes
// and stops the exporters; off, it returns a function that does nothing
// and on false.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, on bool, err error) {
	nothing := func(context.Context) error { return nil }
	exporters, err := exportersOf(cfg.Getenv)
	if err != nil || len(exporters) == 0 {
		return nothing, false, err
	}
	opts := []sdktrace.TracerProviderOption{}
	for _, name := range exporters {
		exp, err := newExporter(ctx, name, cfg)
		if err != nil {
			return nothing, false, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", cmp.Or(cfg.Service, "tidemark"))), resource.WithFromEnv())
	if err != nil && res == nil {
		return nothing, false, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithResource(res))...)
	restore := Use(tp)
	return func(ctx context.Context) error {
		restore()
		return tp.Shutdown(ctx)
	}, true, nil
}

// exportersOf is the list of exporters the environment asks for; empty
// means off.
func exportersOf(getenv func(string) string) ([]string, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	list := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if list == "" {
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
		list = "otlp"
	}
	var names []string
	for name := range strings.SplitSeq(list, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "none":
			return nil, nil
		case "otlp", "console":
			names = append(names, name)
		case "":
		default:
			return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: unsupported exporter %q; Tidemark supports otlp, console and none", name)
		}
	}
	return names, nil
}

// newExporter makes the exporter name: OTLP over HTTP (protobuf) or gRPC,
// or the console (cfg.Console, JSON lines).
func newExporter(ctx context.Context, name string, cfg Config) (sdktrace.SpanExporter, error) {
	if name == "console" {
		w := cfg.Console
		if w == nil {
			return nil, errors.New("OTEL_TRACES_EXPORTER=console: no console to write to")
		}
		return stdouttrace.New(stdouttrace.WithWriter(w))
	}
	protocol := cmp.Or(strings.TrimSpace(cfg.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")),
		strings.TrimSpace(cfg.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")), "http/protobuf")
	switch protocol {
	case "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol %q; Tidemark supports http/protobuf and grpc", protocol)
}
