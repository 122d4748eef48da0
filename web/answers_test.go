package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/provider"
)

// logBuffer collects a server's log lines; the server writes from its
// handlers' goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setupLogged is setup with the server's log kept.
func setupLogged(t *testing.T, readTimeout time.Duration) (*env, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	return setupWith(t, readTimeout, slog.New(slog.NewTextHandler(logs, nil))), logs
}

// exec runs statements on the test's database, as an operator would.
func (e *env) exec(sql string) {
	e.t.Helper()
	if _, err := e.store.Pool().Exec(context.Background(), sql); err != nil {
		e.t.Fatal(err)
	}
}

// within sends req with a deadline, so that a request the server never
// answers fails the test instead of hanging it.
func (e *env) within(d time.Duration, req *http.Request) (*http.Response, []byte) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, raw
}

// checkInternalError checks a 500 answer: exactly {"error": "internal
// error", "request_id": id} with id in X-Request-Id too, and one log line
// naming that id and want. It returns the log line.
func checkInternalError(t *testing.T, resp *http.Response, raw []byte, logs *logBuffer, want string) string {
	t.Helper()
	id := resp.Header.Get("X-Request-Id")
	if resp.StatusCode != http.StatusInternalServerError || id == "" {
		t.Fatalf("answer %d with X-Request-Id %q, want 500 with an id", resp.StatusCode, id)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || len(body) != 2 || body["error"] != "internal error" || body["request_id"] != id {
		t.Fatalf(`body %s, want exactly {"error": "internal error", "request_id": %q}`, raw, id)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "request_id="+id) {
			line = l
		}
	}
	if !strings.Contains(line, "level=ERROR") || !strings.Contains(line, want) {
		t.Fatalf("log line of request %s: %q, want an error line with %q\nlog:\n%s", id, line, want, logs)
	}
	return line
}

// TestInternalErrorAnswer: a store failure during ingest answers 500 with
// only a request id; the log has the details under that id, and neither the
// body, the secret nor the signature.
func TestInternalErrorAnswer(t *testing.T) {
	t.Parallel()
	e, logs := setupLogged(t, 5*time.Second)
	e.exec(`CREATE FUNCTION forced_failure() RETURNS trigger LANGUAGE plpgsql AS $$
	        BEGIN RAISE EXCEPTION 'forced failure'; END $$`)
	e.exec(`CREATE TRIGGER forced_failure BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION forced_failure()`)

	body := snapshotBody("c-1", 1, `{"job_title":"body-marker-7f3a"}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.secret, "m-1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/webhooks/acme/crm", bytes.NewReader(body))
	req.Header.Set("webhook-id", "m-1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, raw := e.within(10*time.Second, req)
	checkInternalError(t, resp, raw, logs, "forced failure")
	for name, secret := range map[string]string{"body": "body-marker-7f3a", "secret": strings.TrimPrefix(e.secret, "whsec_"),
		"signature": strings.TrimPrefix(sig, "v1,")} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds the delivery's %s:\n%s", name, logs)
		}
	}
}

// TestInternalErrorAnswerAPIAndConsole: the API answers a store failure
// with the same body, without logging the token; the console's error page
// shows the request id.
func TestInternalErrorAnswerAPIAndConsole(t *testing.T) {
	t.Parallel()
	e, logs := setupLogged(t, 5*time.Second)
	token := e.token("acme")
	b := e.operator("ops@example.com", false, "acme")
	e.exec(`ALTER TABLE outcome_counters RENAME TO outcome_counters_gone`)

	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/tenants/acme/stats", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, raw := e.within(10*time.Second, req)
	checkInternalError(t, resp, raw, logs, "outcome_counters")
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log holds the API token:\n%s", logs)
	}

	status, doc := b.get("/t/acme")
	page := text(doc, "main")
	if status != http.StatusInternalServerError || !strings.Contains(page, "request id ") {
		t.Fatalf("console overview: %d %q, want 500 showing the request id", status, page)
	}
	id := page[strings.Index(page, "request id ")+len("request id "):]
	id = strings.TrimRight(strings.Fields(id)[0], ".")
	if !strings.Contains(logs.String(), "request_id="+id) {
		t.Fatalf("the console's request id %q is not in the log:\n%s", id, logs)
	}
}

// lockTable holds an ACCESS EXCLUSIVE lock on table until the test ends,
// so that any read of it waits.
func (e *env) lockTable(table string) {
	e.t.Helper()
	ctx := context.Background()
	tx, err := e.store.Pool().Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		e.t.Fatal(err)
	}
}

// TestAPIReadTimeout: an API read that runs into the read timeout answers
// 503 asking for a narrower filter, never 500 and never a wait without end.
func TestAPIReadTimeout(t *testing.T) {
	t.Parallel()
	e := setupWith(t, 300*time.Millisecond, quietLog())
	e.outcome("acme", "crm", e.secret, "m-1", snapshotBody("c-1", 1, `{}`))
	token := e.token("acme")
	e.lockTable("events")
	e.lockTable("outcome_counters")

	for _, path := range []string{"/api/v1/tenants/acme/events?outcome=applied", "/api/v1/tenants/acme/stats"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, raw := e.within(10*time.Second, req)
		var body map[string]string
		json.Unmarshal(raw, &body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(body["error"], "took too long") || !strings.Contains(body["error"], "Narrow it") {
			t.Errorf("%s: %d %s (Retry-After %q), want 503 asking for a narrower filter", path, resp.StatusCode, raw,
				resp.Header.Get("Retry-After"))
		}
	}
}

// TestReadsHaveTheirOwnPool: with every ingest connection taken, deliveries
// get 503 but the console and the API still answer.
func TestReadsHaveTheirOwnPool(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.outcome("acme", "crm", e.secret, "m-1", snapshotBody("c-1", 1, `{}`))
	token := e.token("acme")
	b := e.operator("ops@example.com", false, "acme")

	pool := e.store.Pool()
	var held []*pgxpool.Conn
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()

	for _, path := range []string{"/api/v1/tenants/acme/events", "/api/v1/tenants/acme/stats",
		"/api/v1/tenants/acme/contacts/crm/c-1"} {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, raw := e.within(5*time.Second, req); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the ingest pool taken: %d %s, want 200", path, resp.StatusCode, raw)
		}
	}
	b.client.Timeout = 5 * time.Second
	for _, path := range []string{"/t/acme", "/t/acme/events", "/t/acme/providers/crm", "/t/acme/contacts/crm/c-1"} {
		if status, doc := b.get(path); status != http.StatusOK {
			t.Errorf("console %s with the ingest pool taken: %d %q, want 200", path, status, text(doc, "main"))
		}
	}
	req := signed(t, e.srv.URL, e.secret, "m-2", snapshotBody("c-1", 2, `{}`))
	if resp, raw := e.within(10*time.Second, req); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a delivery with the ingest pool taken: %d %s, want 503", resp.StatusCode, raw)
	}
}
