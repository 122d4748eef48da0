// Package reqlog ties log lines to the request they were written for. The
// web server's first middleware puts a Request in each request's context
// (With); the webhook receiver adds the tenant and the delivery once it
// knows them; and Handler, wrapped around a node's slog handler, writes
// request_id, tenant, delivery_id and trace_id on every line logged with
// that context (the slog *Context methods).
package reqlog

import (
	"context"
	"log/slog"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
)

// Request is what the log knows of one request. Its id is made when first
// asked for, so a request that logs nothing costs no id.
type Request struct {
	mu       sync.Mutex
	id       string
	tenant   string
	delivery string
}

type key struct{}

// With returns ctx carrying a new Request, and the Request.
func With(ctx context.Context) (context.Context, *Request) {
	r := &Request{}
	return context.WithValue(ctx, key{}, r), r
}

// From is ctx's Request, nil outside a request.
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(key{}).(*Request)
	return r
}

// ID is the request's id (a UUIDv7), the same on every call.
func (r *Request) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.id == "" {
		r.id = uuid.Must(uuid.NewV7()).String()
	}
	return r.id
}

// ID is the id of ctx's request, or a new id outside a request.
func ID(ctx context.Context) string {
	if r := From(ctx); r != nil {
		return r.ID()
	}
	return uuid.Must(uuid.NewV7()).String()
}

// SetTenant records the tenant (its slug) ctx's request is for.
func SetTenant(ctx context.Context, slug string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		r.tenant = slug
		r.mu.Unlock()
	}
}

// SetDelivery records the delivery ctx's request received.
func SetDelivery(ctx context.Context, id string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		r.delivery = id
		r.mu.Unlock()
	}
}

// fields are the request's values to log: its id always, the others when
// known.
func (r *Request) fields() (id, tenant, delivery string) {
	id = r.ID()
	r.mu.Lock()
	defer r.mu.Unlock()
	return id, r.tenant, r.delivery
}

// Handler writes the request's values on each record logged with a
// request's context: request_id, and when known tenant, delivery_id and
// (with tracing on) trace_id. A key the record already has is not added
// again.
type Handler struct{ inner slog.Handler }

// NewHandler wraps inner.
func NewHandler(inner slog.Handler) *Handler { return &Handler{inner: inner} }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	if ctx == nil {
		return h.inner.Handle(ctx, rec)
	}
	var add [4]slog.Attr
	n := 0
	if r := From(ctx); r != nil {
		id, tenant, delivery := r.fields()
		add[n], n = slog.String("request_id", id), n+1
		if tenant != "" {
			add[n], n = slog.String("tenant", tenant), n+1
		}
		if delivery != "" {
			add[n], n = slog.String("delivery_id", delivery), n+1
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		add[n], n = slog.String("trace_id", sc.TraceID().String()), n+1
	}
	if n == 0 {
		return h.inner.Handle(ctx, rec)
	}
	rec.Attrs(func(a slog.Attr) bool {
		for i := 0; i < n; i++ {
			if add[i].Key == a.Key {
				add[i], add[n-1] = add[n-1], add[i]
				n--
				i--
			}
		}
		return n > 0
	})
	rec = rec.Clone()
	rec.AddAttrs(add[:n]...)
	return h.inner.Handle(ctx, rec)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name)}
}
