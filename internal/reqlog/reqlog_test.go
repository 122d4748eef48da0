package reqlog

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestHandler: a line logged with a request's context carries its id (the
// same on every line and from ID), the tenant and delivery once set, and
// the trace id of the context's span; a key the line already has is not
// written twice; a line logged outside a request is left as it is.
func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil))).With("node", "n1")
	lines := func() []map[string]any {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not JSON: %q", l)
			}
			if c := strings.Count(l, `"request_id"`); c > 1 {
				t.Errorf("request_id written %d times: %s", c, l)
			}
			out = append(out, m)
		}
		buf.Reset()
		return out
	}

	log.Info("outside")
	if m := lines()[0]; m["request_id"] != nil || m["tenant"] != nil || m["trace_id"] != nil || m["node"] != "n1" {
		t.Errorf("a line outside a request: %v, want it as logged", m)
	}

	ctx, _ := With(context.Background())
	log.InfoContext(ctx, "first")
	SetTenant(ctx, "acme")
	SetDelivery(ctx, "d-1")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4}})
	log.ErrorContext(trace.ContextWithSpanContext(ctx, sc), "second", "request_id", ID(ctx))
	got := lines()
	id := ID(ctx)
	if got[0]["request_id"] != id || got[0]["tenant"] != nil {
		t.Errorf("first line %v, want request_id %s and no tenant yet", got[0], id)
	}
	if got[1]["request_id"] != id || got[1]["tenant"] != "acme" || got[1]["delivery_id"] != "d-1" ||
		got[1]["trace_id"] != sc.TraceID().String() || got[1]["node"] != "n1" {
		t.Errorf("second line %v, want the request's id, tenant, delivery and trace", got[1])
	}
	if other, _ := With(context.Background()); ID(other) == id {
		t.Errorf("two requests share the id %s", id)
	}
}
