package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/internal/tracing/otlptest"
)

// BenchmarkDeliverySpans is what tracing costs one delivery in the SDK:
// the spans of a delivery alone in its group (the webhook's, authenticate,
// parse, queue wait, group commit), batched and exported over OTLP/HTTP to
// a local sink; compare BenchmarkDeliverySpansOff.
func BenchmarkDeliverySpans(b *testing.B) {
	sink := otlptest.Discard()
	defer sink.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL()) // the exporter reads the process's environment
	shutdown, _, _ := Setup(context.Background(), Config{Getenv: func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return sink.URL()
		}
		return ""
	}})
	defer shutdown(context.Background())
	benchmarkDeliverySpans(b)
}

// BenchmarkDeliverySpansOff is the same with tracing off: nothing.
func BenchmarkDeliverySpansOff(b *testing.B) { benchmarkDeliverySpans(b) }

func benchmarkDeliverySpans(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, root := StartRoot(context.Background(), "POST", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", "POST")))
			NoteEndpoint(ctx, "acme", "crm", "standard", "01a23c3d-ddee-788f-9bc0-389dce0ebf40")
			_, s := Start(ctx, "authenticate")
			s.End()
			_, s = Start(ctx, "parse")
			s.SetAttributes(AttrEvents.Int(1))
			s.End()
			_, s = Start(ctx, "queue wait")
			s.End()
			_, s = Start(ctx, "group commit")
			s.SetAttributes(AttrGroupSize.Int(1), AttrGroupRound.Int(1), AttrLeader.Bool(true))
			s.End()
			root.SetAttributes(AttrEvents.Int(1), attribute.Int("tidemark.outcome.applied", 1))
			root.SetAttributes(attribute.String("http.route", "/webhooks/{tenant}/{provider}"), attribute.Int("http.response.status_code", 200))
			root.End()
		}
	})
}
