package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/tracing/otlptest"
)

// TestServeTracingAndJSONLog: serve --log-format json with
// OTEL_EXPORTER_OTLP_ENDPOINT set writes its log as JSON lines and exports
// a delivery's trace over OTLP/HTTP, the last spans flushed when it stops.
// Not parallel: the SDK reads the endpoint from the process's environment.
func TestServeTracingAndJSONLog(t *testing.T) {
	recv := otlptest.New()
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL())
	// Long enough that only the shutdown's flush exports the spans.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000")
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": crashKey,
		"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL()}
	secret := crashProviders(t, env, map[string]string{crashStandard: provider.Standard.Name()})[crashStandard]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"},
			func(k string) string { return env[k] }, nil, &out, &errOut)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for !listening.MatchString(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", errOut.String())
		}
	}
	base := listening.FindStringSubmatch(out.String())[1]

	body := []byte(`{"type":"contact.snapshot","timestamp":"2026-11-29T10:00:00Z","data":{"contact_id":"c-1","revision":1,"snapshot":{}}}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, "m-1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/"+crashTenant+"/"+crashStandard, bytes.NewReader(body))
	req.Header.Set("webhook-id", "m-1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delivery: %d %v", resp.StatusCode, answer)
	}
	if _, spans, _ := recv.Counts(); spans != 0 {
		t.Fatalf("%d spans exported before the shutdown; the test wants the shutdown to flush them", spans)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	var hook otlptest.Span
	for _, s := range recv.Spans() {
		if s.Name == "POST /webhooks/{tenant}/{provider}" {
			hook = s
		}
	}
	if hook.Attrs["tidemark.delivery.id"] != answer["delivery_id"] || hook.Resource["service.name"] != "tidemark" {
		t.Fatalf("exported at shutdown: webhook span %+v, want the delivery %v's, of service tidemark", hook, answer["delivery_id"])
	}
	if tree := otlptest.Trace(recv.Spans(), hook.TraceID); tree["group commit"].SpanID == "" || tree["sql batch"].SpanID == "" {
		t.Errorf("the delivery's trace lacks its group commit or SQL batch: %v", tree)
	}

	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil || m["level"] == nil {
			t.Errorf("serve --log-format json wrote a line that is not a JSON record: %q", line)
		}
	}
	if !strings.Contains(errOut.String(), `"msg":"tracing: exporting spans`) {
		t.Errorf("serve's log does not say that tracing is on:\n%s", errOut.String())
	}
}

// TestServeLogFormatRefused: a --log-format other than text or json is
// refused before serve starts anything; so is an OTEL_TRACES_EXPORTER
// Tidemark does not support.
func TestServeLogFormatRefused(t *testing.T) {
	t.Parallel()
	_, _, err := tidemark(t, map[string]string{}, "", "serve", "--log-format", "yaml")
	if err == nil || !strings.Contains(err.Error(), "--log-format must be text or json") {
		t.Errorf("serve --log-format yaml: %v, want a refusal naming the formats", err)
	}
	_, _, err = tidemark(t, map[string]string{}, "", "worker", "--queue", "nats://127.0.0.1:1", "--log-format", "xml")
	if err == nil || !strings.Contains(err.Error(), "--log-format must be text or json") {
		t.Errorf("worker --log-format xml: %v, want a refusal naming the formats", err)
	}
	_, _, err = tidemark(t, map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, "", "serve")
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Errorf("serve with OTEL_TRACES_EXPORTER=jaeger: %v, want a refusal naming the variable", err)
	}
}
