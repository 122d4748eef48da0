package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/testdb"
)

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.2:0": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "192.0.2.10:8080": false,
		"example.com:8080": false, "127.0.0.1": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestServeRefusesRemoteEmbedded: on the embedded database, serve listens
// on loopback only unless told otherwise, and refuses before it starts
// anything. It changes the working directory, so it cannot run in parallel.
func TestServeRefusesRemoteEmbedded(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		_, _, err := tidemark(t, nil, "", "serve", "--addr", addr)
		if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
			t.Fatalf("serve --addr %s on the embedded database: %v, want a refusal naming --allow-remote", addr, err)
		}
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("the refused serve left ./%s (%v)", dataDir, err)
	}
}

// TestServeMetricsAddr: with --metrics-addr, /metrics is served there and
// not on --addr. Its alert evaluator runs: the violations of tenant acme
// in the last reconciliation report fire an alert that /metrics counts.
func TestServeMetricsAddr(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', 'Acme'))
		INSERT INTO reconciliation_reports (tenant_id, started_at, finished_at, counts, violations)
		VALUES (0, now(), now(), '{}', '[{"invariant": "record_revision", "tenant": "acme", "detail": "test"}]')`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"},
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
	metrics := regexp.MustCompile(`Metrics are served on (http://\S+)`).FindStringSubmatch(out.String())
	if metrics == nil {
		t.Fatalf("serve did not say where the metrics are:\n%s", out.String())
	}
	for url, want := range map[string]int{
		listening.FindStringSubmatch(out.String())[1] + "/metrics": http.StatusNotFound,
		metrics[1]: http.StatusOK,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s answered %d, want %d", url, resp.StatusCode, want)
		}
		// The node's health: every service runs.
		for _, service := range []string{"http", "metrics http", "group committers", "database pools", "alert evaluator"} {
			if line := `tidemark_service_up{service="` + service + `"} 1`; want == http.StatusOK && !strings.Contains(string(body), line) {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	}
	firing := `tidemark_alerts_firing{rule="reconciliation",tenant="acme"} 1`
	for body := ""; !strings.Contains(body, firing); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s:\n%s", firing, body)
		}
		resp, err := http.Get(metrics[1])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, errOut.String())
	}
}
