// Package otlptest is an OTLP/HTTP trace receiver for tests and the
// benchmark: an httptest server that decodes the protobuf exports the SDK
// posts to /v1/traces and keeps their spans (or, Discard, only reads and
// counts them), so a test reads the span tree a real export carried.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one exported span, its ids in hex and its attributes as text.
type Span struct {
	Name                      string
	TraceID, SpanID, ParentID string // ParentID "" for a root
	Kind                      int32  // OTLP's SpanKind: 2 server, 3 client, 4 producer
	Attrs                     map[string]string
	Links                     []Link
	Failed                    bool // status ERROR
	// Values are every attribute value the export carried for the span:
	// its own, its events', its links' and its resource's.
	Values []string
	// Resource is the resource's attributes (service.name).
	Resource map[string]string
}

// Link is a span's link to another span.
type Link struct{ TraceID, SpanID string }

// Receiver collects exported spans.
type Receiver struct {
	srv     *httptest.Server
	discard bool

	mu      sync.Mutex
	spans   []Span
	exports int
	count   int
	bytes   int64
}

// New starts a receiver that keeps the spans; Discard one that only counts
// them. Close it when done.
func New() *Receiver { return start(false) }

// Discard starts a receiver that reads each export and throws it away
// undecoded, costing the machine as little as it can: the benchmark's
// sink. It counts exports and bytes, not spans.
func Discard() *Receiver { return start(true) }

func start(discard bool) *Receiver {
	r := &Receiver{discard: discard}
	r.srv = httptest.NewServer(http.HandlerFunc(r.handle))
	return r
}

// URL is the base URL to give OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Receiver) Close() { r.srv.Close() }

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Counts are how many exports, spans (0 for Discard) and bytes were
// received.
func (r *Receiver) Counts() (exports, spans int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports, r.count, r.bytes
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "POST /v1/traces only", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.discard {
		r.mu.Lock()
		r.exports++
		r.bytes += int64(len(raw))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		http.Error(w, "not an OTLP trace export: "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	n := 0
	for _, rs := range export.ResourceSpans {
		resource := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
			for _, s := range ss.Spans {
				sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Kind: int32(s.Kind), Attrs: attrs(s.Attributes),
					Failed: s.GetStatus().GetCode() == 2, Resource: resource}
				for _, v := range sp.Attrs {
					sp.Values = append(sp.Values, v)
				}
				for _, e := range s.Events {
					sp.Values = append(sp.Values, e.Name)
					for _, v := range attrs(e.Attributes) {
						sp.Values = append(sp.Values, v)
					}
				}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.TraceId), SpanID: hex.EncodeToString(l.SpanId)})
					for _, v := range attrs(l.Attributes) {
						sp.Values = append(sp.Values, v)
					}
				}
				for _, v := range resource {
					sp.Values = append(sp.Values, v)
				}
				sp.Values = append(sp.Values, s.GetStatus().GetMessage())
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.exports++
	r.count += n
	r.bytes += int64(len(raw))
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// attrs are OTLP attributes as text.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = text(kv.Value)
	}
	return m
}

func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		s := ""
		for _, e := range x.ArrayValue.GetValues() {
			s += text(e) + "\n"
		}
		return s
	case *commonpb.AnyValue_KvlistValue:
		s := ""
		for _, kv := range x.KvlistValue.GetValues() {
			s += kv.Key + "=" + text(kv.Value) + "\n"
		}
		return s
	}
	return ""
}

// Trace is the spans of one trace, by name; a name used twice keeps the
// last.
func Trace(spans []Span, traceID string) map[string]Span {
	m := map[string]Span{}
	for _, s := range spans {
		if s.TraceID == traceID {
			m[s.Name] = s
		}
	}
	return m
}
