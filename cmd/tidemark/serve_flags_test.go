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
// in the last reconciliation report fire an alert that /metrics counts,
// by rule and naming no tenant.
func TestServeMetricsAddr(t *testing.T) {
	t.Parallel()
	dbURL := testdb.NewURL(t)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `WITH t AS (INSERT INTO tenants (slug, name) VALUES ('acme', 'Acme'))
		INSERT INTO reconciliation_reports (tenant_id, started_at, finished_at, counts, violations)
		VALUES (0, now(), now(), '{}', '[{"invariant": "record_revision", "tenant": "acme", "detail": "test"}]')`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := serveInProcess(t, dbURL, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	metrics := regexp.MustCompile(`Metrics are served on (http://\S+)`).FindStringSubmatch(s.out.String())
	if metrics == nil {
		t.Fatalf("serve did not say where the metrics are:\n%s", s.out.String())
	}
	for url, want := range map[string]int{s.url + "/metrics": http.StatusNotFound, metrics[1]: http.StatusOK} {
		status, body := get(t, url)
		if status != want {
			t.Errorf("GET %s answered %d, want %d", url, status, want)
		}
		// The node's health: every service runs.
		for _, service := range []string{"http", "metrics http", "group committers", "database pools", "alert evaluator"} {
			if line := `tidemark_service_up{service="` + service + `"} 1`; want == http.StatusOK && !strings.Contains(body, line) {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	}
	// Read from the database at most every 10 s: the first scrape may
	// predate the evaluation.
	firing := `tidemark_alerts_firing{rule="reconciliation"} 1`
	deadline := time.Now().Add(45 * time.Second)
	for body := ""; !strings.Contains(body, firing); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %s:\n%s", firing, body)
		}
		_, body = get(t, metrics[1])
		if strings.Contains(body, "acme") {
			t.Fatalf("/metrics names tenant acme without --metrics-tenant-labels:\n%s", body)
		}
	}
	s.stop(t)
}

// TestServeMetricsOffTheAddr: by default /metrics is not on --addr, where
// anyone who reaches the webhooks would read it, but on 127.0.0.1:9464
// (or, when another node of the machine holds that, nowhere, and serve
// says so).
func TestServeMetricsOffTheAddr(t *testing.T) {
	t.Parallel()
	s := serveInProcess(t, testdb.NewURL(t), "--addr", "127.0.0.1:0")
	if status, _ := get(t, s.url+"/metrics"); status != http.StatusNotFound {
		t.Errorf("GET --addr/metrics answered %d, want 404", status)
	}
	served := strings.Contains(s.out.String(), "Metrics are served on http://127.0.0.1:9464/metrics")
	taken := strings.Contains(s.out.String(), "Metrics are not served: 127.0.0.1:9464 is in use; give this node its own with --metrics-addr")
	if served == taken {
		t.Errorf("serve said neither that its metrics are on 127.0.0.1:9464 nor that the address is taken:\n%s", s.out.String())
	}
	s.stop(t)
}

// servedInProcess is serve run by run, with the URL it listens on.
type servedInProcess struct {
	out, errOut *syncBuffer
	url         string
	cancel      context.CancelFunc
	done        chan error
}

// serveInProcess runs serve on the database at dbURL until it listens.
func serveInProcess(t *testing.T, dbURL string, args ...string) *servedInProcess {
	t.Helper()
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	ctx, cancel := context.WithCancel(context.Background())
	s := &servedInProcess{out: &syncBuffer{}, errOut: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	t.Cleanup(cancel)
	go func() {
		s.done <- run(ctx, append([]string{"serve"}, args...), func(k string) string { return env[k] }, nil, s.out, s.errOut)
	}()
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	for deadline := time.Now().Add(30 * time.Second); !listening.MatchString(s.out.String()); {
		select {
		case err := <-s.done:
			t.Fatalf("serve exited: %v\n%s", err, s.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", s.errOut.String())
		}
	}
	s.url = listening.FindStringSubmatch(s.out.String())[1]
	return s
}

// stop stops serve and fails the test if it did not stop cleanly.
func (s *servedInProcess) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	if err := <-s.done; err != nil {
		t.Fatalf("serve: %v\n%s", err, s.errOut.String())
	}
}

// get answers a GET's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
