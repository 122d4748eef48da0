package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// checkInternalError checks a 500 answer: exactly {"error": "internal
// error", "request_id": id} with id in X-Request-Id too, and one log line
// naming that id and want. It returns the log line.
func checkInternalError(t *testing.T, resp *http.Response, raw []byte, logs *webtest.LogBuffer, want string) string {
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
	e, logs := webtest.SetupLogged(t, 5*time.Second)
	e.Exec(`CREATE FUNCTION forced_failure() RETURNS trigger LANGUAGE plpgsql AS $$
	        BEGIN RAISE EXCEPTION 'forced failure'; END $$`)
	e.Exec(`CREATE TRIGGER forced_failure BEFORE INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION forced_failure()`)

	body := webtest.SnapshotBody("c-1", 1, `{"job_title":"body-marker-7f3a"}`)
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(e.Secret, "m-1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/webhooks/acme/crm", bytes.NewReader(body))
	req.Header.Set("webhook-id", "m-1")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, raw := e.Within(10*time.Second, req)
	checkInternalError(t, resp, raw, logs, "forced failure")
	for name, secret := range map[string]string{"body": "body-marker-7f3a", "secret": strings.TrimPrefix(e.Secret, "whsec_"),
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
	e, logs := webtest.SetupLogged(t, 5*time.Second)
	token := e.Token("acme")
	b := e.Operator("ops@example.com", false, "acme")
	e.Exec(`ALTER TABLE outcome_counters RENAME TO outcome_counters_gone`)

	req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+"/api/v1/tenants/acme/stats", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, raw := e.Within(10*time.Second, req)
	checkInternalError(t, resp, raw, logs, "outcome_counters")
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log holds the API token:\n%s", logs)
	}

	status, doc := b.Get("/t/acme")
	page := webtest.Text(doc, "main")
	if status != http.StatusInternalServerError || !strings.Contains(page, "request id ") {
		t.Fatalf("console overview: %d %q, want 500 showing the request id", status, page)
	}
	id := page[strings.Index(page, "request id ")+len("request id "):]
	id = strings.TrimRight(strings.Fields(id)[0], ".")
	if !strings.Contains(logs.String(), "request_id="+id) {
		t.Fatalf("the console's request id %q is not in the log:\n%s", id, logs)
	}
}

// TestAPIReadTimeout: an API read that runs into the read timeout answers
// 503 asking for a narrower filter, never 500 and never a wait without end.
func TestAPIReadTimeout(t *testing.T) {
	t.Parallel()
	e := webtest.SetupWith(t, 300*time.Millisecond, webtest.QuietLog())
	e.Outcome("acme", "crm", e.Secret, "m-1", webtest.SnapshotBody("c-1", 1, `{}`))
	token := e.Token("acme")
	e.LockTable("events")
	e.LockTable("outcome_counters")

	for _, path := range []string{"/api/v1/tenants/acme/events?outcome=applied", "/api/v1/tenants/acme/stats"} {
		req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, raw := e.Within(10*time.Second, req)
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
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "m-1", webtest.SnapshotBody("c-1", 1, `{}`))
	token := e.Token("acme")
	b := e.Operator("ops@example.com", false, "acme")

	pool := e.Store.Pool()
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
		req, _ := http.NewRequest(http.MethodGet, e.Srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, raw := e.Within(5*time.Second, req); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the ingest pool taken: %d %s, want 200", path, resp.StatusCode, raw)
		}
	}
	b.Client.Timeout = 5 * time.Second
	for _, path := range []string{"/t/acme", "/t/acme/events", "/t/acme/providers/crm", "/t/acme/contacts/crm/c-1"} {
		if status, doc := b.Get(path); status != http.StatusOK {
			t.Errorf("console %s with the ingest pool taken: %d %q, want 200", path, status, webtest.Text(doc, "main"))
		}
	}
	req := webtest.Signed(t, e.Srv.URL, e.Secret, "m-2", webtest.SnapshotBody("c-1", 2, `{}`))
	if resp, raw := e.Within(10*time.Second, req); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a delivery with the ingest pool taken: %d %s, want 503", resp.StatusCode, raw)
	}
}
