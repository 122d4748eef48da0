package httpx

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/internal/reqlog"
	"github.com/tidemark/tidemark/internal/tracing"
)

// Observe gives each request its log context (reqlog: the request id on
// every line logged for it) and, with tracing on, its server span. An API
// call (/api/...) continues the trace of its traceparent header; a webhook
// or a console page always starts a trace of its own: a provider's trace
// is not ours. Health checks, metrics and static files are not traced.
//
// The span is named by the route's pattern and carries the method, the
// route and the status only: never the path (which holds record ids), the
// query, a header or the client's address.
func Observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, _ := reqlog.With(r.Context())
		if !tracing.Enabled() || untraced(r.URL.Path) {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		method := knownMethod(r.Method)
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", method))}
		var span trace.Span
		if strings.HasPrefix(r.URL.Path, "/api/") {
			ctx, span = tracing.Start(tracing.Extract(ctx, r.Header), method, opts...)
		} else {
			ctx, span = tracing.StartRoot(ctx, method, opts...)
		}
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		code := attribute.Int("http.response.status_code", status)
		if rc := chi.RouteContext(ctx); rc != nil && rc.RoutePattern() != "" {
			route := rc.RoutePattern()
			span.SetName(method + " " + route)
			span.SetAttributes(attribute.String("http.route", route), code)
		} else {
			span.SetAttributes(code)
		}
		if status >= 500 {
			tracing.Fail(span, http.StatusText(status))
		}
	})
}

// knownMethod is the request's method, or _OTHER for one HTTP does not
// define (as OpenTelemetry's conventions say): a client's made-up text never
// reaches a span.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// untraced are the paths no span is worth: probes, metrics, assets.
func untraced(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics" || path == "/favicon.ico" ||
		strings.HasPrefix(path, "/static/")
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
