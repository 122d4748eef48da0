package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/reqlog"
	"github.com/tidemark/tidemark/internal/tracing"
	"github.com/tidemark/tidemark/internal/tracing/otlptest"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// startTracing turns tracing on as serve does, from the OTEL_* environment,
// exporting over OTLP/HTTP to an in-process receiver; flush exports what
// was recorded and turns tracing off again. Not for parallel tests: the
// tracer and the environment are the process's.
func startTracing(t *testing.T) (recv *otlptest.Receiver, flush func()) {
	t.Helper()
	recv = otlptest.New()
	t.Cleanup(recv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	shutdown, on, err := tracing.Setup(context.Background(), tracing.Config{Getenv: os.Getenv})
	if err != nil || !on {
		t.Fatalf("tracing.Setup with OTEL_EXPORTER_OTLP_ENDPOINT set: on %v, %v", on, err)
	}
	done := false
	flush = func() {
		if !done {
			done = true
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("export the spans: %v", err)
			}
		}
	}
	t.Cleanup(flush)
	return recv, flush
}

// A delivery whose body, secret, signature and personal data must appear
// in no span.
const (
	traceMarker = "body-marker-5c1e"
	traceEmail  = "pat.doe@example.com"
)

// TestTraceOfOneDelivery: with tracing on, one delivery through the real
// server and PostgreSQL is exported as one trace: the webhook's server
// span (a new trace even when the provider sent a traceparent) with the
// tenant, provider, delivery id and outcome counts, and below it
// authenticate, parse, queue wait and group commit, whose child is the SQL
// batch. An API call continues its caller's traceparent; a replay it
// starts is a trace of its own, linked to the call. No attribute of any
// span holds the body, the secret, the signature or an email address.
func TestTraceOfOneDelivery(t *testing.T) {
	e := webtest.SetupWith(t, 5*time.Second, webtest.QuietLog())
	token := e.Token("acme")
	recv, flush := startTracing(t)

	body := webtest.SnapshotBody("c-1", 1, `{"email":"`+traceEmail+`","job_title":"`+traceMarker+`"}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.Secret, "m-1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	// A provider's traceparent is not ours: the webhook ignores it.
	const providerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	status, answer := e.Post("/webhooks/acme/crm", body, map[string]string{"webhook-id": "m-1",
		"webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig,
		"traceparent": "00-" + providerTrace + "-00f067aa0ba902b7-01"})
	if webtest.Outcome(t, status, answer) != "applied" {
		t.Fatalf("delivery: %v, want applied", answer)
	}
	deliveryID, _ := answer["delivery_id"].(string)

	// An API call with a traceparent continues that trace; so does the
	// replay it asks for, as a trace of its own linked to the call.
	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	status, replayed := e.Post("/api/v1/tenants/acme/deliveries/"+deliveryID+"/replay", nil, map[string]string{
		"Authorization": "Bearer " + token, "traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	if status != http.StatusOK {
		t.Fatalf("replay: %d %v", status, replayed)
	}
	flush()
	spans := recv.Spans()

	var hook otlptest.Span
	for _, s := range spans {
		if s.Name == "POST /webhooks/{tenant}/{provider}" {
			hook = s
		}
	}
	if hook.TraceID == "" {
		t.Fatalf("no webhook span among %d exported spans: %+v", len(spans), spans)
	}
	if hook.TraceID == providerTrace || hook.ParentID != "" || hook.Kind != 2 {
		t.Errorf("webhook span: trace %s, parent %q, kind %d; want a new trace (not the provider's %s), a root server span",
			hook.TraceID, hook.ParentID, hook.Kind, providerTrace)
	}
	for k, want := range map[string]string{"tidemark.tenant": "acme", "tidemark.provider": "crm", "tidemark.provider.kind": "standard",
		"tidemark.delivery.id": deliveryID, "tidemark.outcome.applied": "1", "tidemark.events": "1",
		"http.request.method": "POST", "http.route": "/webhooks/{tenant}/{provider}", "http.response.status_code": "200"} {
		if hook.Attrs[k] != want {
			t.Errorf("webhook span's %s = %q, want %q (attributes %v)", k, hook.Attrs[k], want, hook.Attrs)
		}
	}
	if hook.Resource["service.name"] != "tidemark" {
		t.Errorf("resource %v, want service.name tidemark", hook.Resource)
	}
	tree := otlptest.Trace(spans, hook.TraceID)
	for name, parent := range map[string]string{"authenticate": hook.Name, "parse": hook.Name, "queue wait": hook.Name,
		"group commit": hook.Name, "sql batch": "group commit"} {
		s, ok := tree[name]
		if !ok {
			t.Errorf("the delivery's trace has no %q span; it has %v", name, names(tree))
			continue
		}
		if s.ParentID != tree[parent].SpanID {
			t.Errorf("%q's parent is %s, want %q (%s)", name, s.ParentID, parent, tree[parent].SpanID)
		}
	}
	if g := tree["group commit"]; g.Attrs["tidemark.group.size"] != "1" || g.Attrs["tidemark.group.rounds"] != "1" {
		t.Errorf("group commit attributes %v, want a group of 1 in 1 round", g.Attrs)
	}
	if s := tree["sql batch"]; s.Attrs["db.system.name"] != "postgresql" || s.Attrs["db.operation.batch.size"] == "" || s.Kind != 3 {
		t.Errorf("sql batch span: kind %d, attributes %v", s.Kind, s.Attrs)
	}

	// The API call: a child of the caller's span, in the caller's trace.
	var call, replay otlptest.Span
	for _, s := range spans {
		switch s.Name {
		case "POST /api/v1/tenants/{tenant}/deliveries/{id}/replay":
			call = s
		case "replay":
			replay = s
		}
	}
	if call.TraceID != callerTrace || call.ParentID != callerSpan {
		t.Errorf("API call span: trace %s parent %s, want the caller's trace %s and span %s", call.TraceID, call.ParentID,
			callerTrace, callerSpan)
	}
	if replay.TraceID == "" || replay.TraceID == callerTrace || replay.ParentID != "" ||
		len(replay.Links) != 1 || replay.Links[0].SpanID != call.SpanID {
		t.Errorf("replay span %+v: want a root of its own trace linked to the API call's span %s", replay, call.SpanID)
	}
	if replay.Attrs["tidemark.replay_of"] != deliveryID || replay.Attrs["tidemark.outcome.duplicate"] != "1" {
		t.Errorf("replay span attributes %v, want replay_of %s and one duplicate", replay.Attrs, deliveryID)
	}
	if _, ok := otlptest.Trace(spans, replay.TraceID)["sql batch"]; !ok {
		t.Errorf("the replay's trace has no sql batch span")
	}

	// Nothing of the delivery's content or credentials, in any span.
	secrets := map[string]string{"body": traceMarker, "email": traceEmail, "email-like text": "@",
		"secret": strings.TrimPrefix(e.Secret, "whsec_"), "signature": strings.TrimPrefix(sig, "v1,"), "token": token}
	for _, s := range spans {
		for _, v := range s.Values {
			for what, secret := range secrets {
				if strings.Contains(v, secret) {
					t.Errorf("span %q carries the delivery's %s in %q", s.Name, what, v)
				}
			}
		}
	}
}

func names(tree map[string]otlptest.Span) []string {
	var out []string
	for n := range tree {
		out = append(out, n)
	}
	return out
}

// TestRequestLogJSON: serve's JSON log (reqlog's handler) writes, on each
// line logged for a request, its request_id, and once known its tenant,
// delivery_id and trace id; the request id of a 500 answer finds them.
func TestRequestLogJSON(t *testing.T) {
	logs := &webtest.LogBuffer{}
	e := webtest.SetupWith(t, 5*time.Second, slog.New(reqlog.NewHandler(slog.NewJSONHandler(logs, nil))))
	_, flush := startTracing(t)
	defer flush()
	e.Exec(`CREATE FUNCTION forced_failure() RETURNS trigger LANGUAGE plpgsql AS $$
	        BEGIN RAISE EXCEPTION 'forced failure'; END $$`)
	e.Exec(`CREATE TRIGGER forced_failure BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION forced_failure()`)

	req := webtest.Signed(t, e.Srv.URL, e.Secret, "m-1", webtest.SnapshotBody("c-1", 1, `{}`))
	resp, raw := e.Within(10*time.Second, req)
	var answer map[string]string
	json.Unmarshal(raw, &answer)
	id := answer["request_id"]
	if resp.StatusCode != http.StatusInternalServerError || id == "" || resp.Header.Get("X-Request-Id") != id {
		t.Fatalf("answer %d %s (X-Request-Id %q), want 500 with a request id", resp.StatusCode, raw, resp.Header.Get("X-Request-Id"))
	}
	var mine []map[string]any
	for line := range bytes.Lines([]byte(logs.String())) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["request_id"] == id {
			mine = append(mine, m)
			if n := bytes.Count(line, []byte(`"request_id"`)); n != 1 {
				t.Errorf("request_id written %d times on %q", n, line)
			}
		}
	}
	if len(mine) == 0 {
		t.Fatalf("no log line carries the 500's request id %s:\n%s", id, logs)
	}
	for _, m := range mine {
		delivery, _ := m["delivery_id"].(string)
		trace, _ := m["trace_id"].(string)
		if m["tenant"] != "acme" || len(delivery) != 36 || len(trace) != 32 {
			t.Errorf("log line %v: want tenant acme, the delivery's id and the trace's id", m)
		}
	}
	if !strings.Contains(logs.String(), `"msg":"internal error"`) || !strings.Contains(logs.String(), "forced failure") {
		t.Errorf("the log does not have the internal error's details:\n%s", logs)
	}
}
