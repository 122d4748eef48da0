package hook_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestWebhookOutcomesOverHTTP(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	deliver := func(id string, body []byte) string {
		status, answer := e.Deliver1(id, body)
		return webtest.Outcome(t, status, answer)
	}
	if got := deliver("msg_1", webtest.SnapshotBody("c-1", 10, `{"job_title":"Analyst"}`)); got != "applied" {
		t.Fatalf("first revision: %s", got)
	}
	if got := deliver("msg_1", webtest.SnapshotBody("c-1", 10, `{"job_title":"Analyst"}`)); got != "duplicate" {
		t.Fatalf("redelivery: %s", got)
	}
	if got := deliver("msg_2", webtest.SnapshotBody("c-1", 9, `{"job_title":"Intern"}`)); got != "stale" {
		t.Fatalf("older revision: %s", got)
	}
	if got := deliver("msg_3", webtest.SnapshotBody("c-1", nil, `{"job_title":"Intern"}`)); got != "unversioned" {
		t.Fatalf("no revision: %s", got)
	}
	status, body := e.Deliver1("msg_4", webtest.SnapshotBody("c-1", 12, `{"job_title":"Director"}`))
	res := body["results"].([]any)[0].(map[string]any)
	if status != 200 || res["outcome"] != "applied" || res["contact_id"] != "c-1" || res["revision"] != 12.0 ||
		res["current_revision"] != 12.0 || res["event_id"] != "msg_4" || body["delivery_id"] == "" {
		t.Fatalf("answer %d %v", status, body)
	}
}

func TestWebhookRejectsMalformedEvents(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for _, tc := range []struct {
		name, body, reason string
	}{
		{"no contact id", `{"type":"contact.snapshot","data":{"revision":1,"snapshot":{}}}`, "contact_id is missing"},
		{"snapshot not an object", `{"type":"contact.snapshot","data":{"contact_id":"c","revision":1,"snapshot":[1]}}`, "snapshot must be a JSON object"},
		{"negative revision", `{"type":"contact.snapshot","data":{"contact_id":"c","revision":-1,"snapshot":{}}}`, "non-negative integer"},
		{"fractional revision", `{"type":"contact.snapshot","data":{"contact_id":"c","revision":1.5,"snapshot":{}}}`, "non-negative integer"},
		{"string revision", `{"type":"contact.snapshot","data":{"contact_id":"c","revision":"7","snapshot":{}}}`, "non-negative integer"},
		{"data not an object", `{"type":"contact.snapshot","data":"x"}`, "must be a JSON object"},
		{"NUL in contact id", `{"type":"contact.snapshot","data":{"contact_id":"c\u0000","revision":1,"snapshot":{}}}`, "non-empty string"},
		{"NUL in snapshot", `{"type":"contact.snapshot","data":{"contact_id":"c","revision":1,"snapshot":{"a":"\u0000"}}}`, "NUL"},
		{"deal without object id", `{"type":"deal.snapshot","data":{"contact_id":"c","revision":1,"snapshot":{}}}`, "object_id is missing"},
	} {
		status, body := e.Deliver1("msg_"+strings.ReplaceAll(tc.name, " ", "_"), []byte(tc.body))
		res := body["results"].([]any)[0].(map[string]any)
		if status != 200 || res["outcome"] != "rejected" || !strings.Contains(res["reason"].(string), tc.reason) {
			t.Errorf("%s: %d %v, want rejected with reason containing %q", tc.name, status, body, tc.reason)
		}
	}
}

func TestWebhookStatuses(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	now := time.Now().Unix()
	good := webtest.SnapshotBody("c-1", 1, `{"a":1}`)
	surrogate := webtest.SnapshotBody("c-2", 1, `{"name":"\ud800"}`)
	signed := func(id string, ts int64, body []byte) map[string]string {
		sig, _ := provider.SignStandard(e.Secret, id, ts, body)
		return map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig}
	}
	for _, tc := range []struct {
		name    string
		path    string
		body    []byte
		headers map[string]string
		status  int
		errLike string
	}{
		{"unknown tenant", "/webhooks/nobody/crm", good, signed("m1", now, good), 404, "unknown tenant"},
		{"unknown provider", "/webhooks/acme/nothing", good, signed("m1", now, good), 404, "unknown tenant"},
		{"no signature", "/webhooks/acme/crm", good, map[string]string{"webhook-id": "m1", "webhook-timestamp": strconv.FormatInt(now, 10)}, 401, "required"},
		{"wrong secret", "/webhooks/acme/crm", good, func() map[string]string {
			h := signed("m1", now, good)
			h["webhook-signature"], _ = provider.SignStandard(provider.NewStandardSecret(), "m1", now, good)
			return h
		}(), 401, "no webhook-signature matches"},
		{"body changed after signing", "/webhooks/acme/crm", webtest.SnapshotBody("c-1", 2, `{"a":1}`), signed("m1", now, good), 401, "no webhook-signature matches"},
		{"old timestamp", "/webhooks/acme/crm", good, signed("m1", now-400, good), 401, "5 minutes"},
		{"future timestamp", "/webhooks/acme/crm", good, signed("m1", now+400, good), 401, "5 minutes"},
		{"not JSON", "/webhooks/acme/crm", []byte(`{"type":`), signed("m1", now, []byte(`{"type":`)), 400, "not a JSON object"},
		{"no type", "/webhooks/acme/crm", []byte(`{"data":{}}`), signed("m1", now, []byte(`{"data":{}}`)), 400, `no "type"`},
		{"type without action", "/webhooks/acme/crm", []byte(`{"type":"contact"}`), signed("m1", now, []byte(`{"type":"contact"}`)), 400, "<object type>.<action>"},
		{"invalid UTF-8", "/webhooks/acme/crm", []byte("{\"type\":\"contact.snapshot\",\"x\":\"\xff\"}"), signed("m1", now, []byte("{\"type\":\"contact.snapshot\",\"x\":\"\xff\"}")), 400, "UTF-8"},
		{"lone surrogate", "/webhooks/acme/crm", surrogate, signed("m1", now, surrogate), 400, "cannot be stored"},
		{"oversize", "/webhooks/acme/crm", bytes.Repeat([]byte(" "), web.DefaultMaxBody+1), map[string]string{}, 413, "larger than"},
	} {
		status, body := e.Post(tc.path, tc.body, tc.headers)
		msg, _ := body["error"].(string)
		if status != tc.status || !strings.Contains(msg, tc.errLike) {
			t.Errorf("%s: %d %v, want %d with error containing %q", tc.name, status, body, tc.status, tc.errLike)
		}
	}

	// Rejected deliveries of a known provider are counted for operators, and
	// a sample is kept (one a second), without the body when the signature
	// failed.
	e.FlushRefusals()
	var counted, sampled, bodyOfForged int
	e.Store.Pool().QueryRow(context.Background(),
		`SELECT sum(n) FROM outcome_counters WHERE outcome = 'delivery_rejected'`).Scan(&counted)
	e.Store.Pool().QueryRow(context.Background(),
		`SELECT count(*), count(body) FILTER (WHERE signature <> 'valid') FROM deliveries WHERE status IN (400, 401, 413)`).Scan(&sampled, &bodyOfForged)
	if counted != 11 || sampled == 0 || bodyOfForged != 0 {
		t.Fatalf("counted %d rejected deliveries, sampled %d, %d with the body of an unauthenticated sender; want 11, some, 0",
			counted, sampled, bodyOfForged)
	}
}

func TestWebhookAcceptsEitherSecretDuringRotation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	p, _ := e.Store.Endpoint(ctx, "acme", "crm")
	newSecret := provider.NewStandardSecret()
	if err := e.Store.RotateProviderSecret(ctx, p.TenantID, p.ID, newSecret); err != nil {
		t.Fatal(err)
	}
	if got := e.Outcome("acme", "crm", e.Secret, "m-old", webtest.SnapshotBody("c-1", 1, `{}`)); got != "applied" {
		t.Fatalf("old secret during rotation: %s", got)
	}
	if got := e.Outcome("acme", "crm", newSecret, "m-new", webtest.SnapshotBody("c-1", 2, `{}`)); got != "applied" {
		t.Fatalf("new secret during rotation: %s", got)
	}
	// A second rotation retires the first secret: at most two are active.
	third := provider.NewStandardSecret()
	if err := e.Store.RotateProviderSecret(ctx, p.TenantID, p.ID, third); err != nil {
		t.Fatal(err)
	}
	if status, _ := e.Deliver("acme", "crm", e.Secret, "m-retired", webtest.SnapshotBody("c-1", 3, `{}`)); status != 401 {
		t.Fatalf("retired secret answered %d, want 401", status)
	}
	if got := e.Outcome("acme", "crm", newSecret, "m-prev", webtest.SnapshotBody("c-1", 4, `{}`)); got != "applied" {
		t.Fatalf("previous secret after second rotation: %s", got)
	}
}

// TestStandardWebhooksTestVector checks the signature published with the
// Standard Webhooks specification's reference libraries.
func TestStandardWebhooksTestVector(t *testing.T) {
	t.Parallel()
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts     = 1614265330
		body   = `{"test": 2432232314}`
		want   = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	got, err := provider.SignStandard(secret, id, ts, []byte(body))
	if err != nil || got != want {
		t.Fatalf("SignStandard = %q, %v; want %q", got, err, want)
	}

	// The receiver accepts the vector's signature among others when its
	// clock is at the vector's time, and refuses the published bad one.
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	if _, err := e.Store.ConnectProvider(ctx, e.Tenant("acme").ID, "vector", "standard", secret, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Config{Store: e.Store,
		Sessions: e.Store.SessionStore(), Ping: e.Store.Pool().Ping,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    func() time.Time { return time.Unix(ts, 0) }}).Handler())
	defer srv.Close()
	post := func(sig string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/webhooks/acme/vector", strings.NewReader(body))
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.Itoa(ts))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const bad = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	// The vector's body has no "type", so a verified delivery is a 400, not a 401.
	if status := post(bad + " v2," + want[3:] + " " + want + " " + bad); status != 400 {
		t.Fatalf("valid signature among others answered %d, want 400 (verified, then refused as not our format)", status)
	}
	if status := post(bad); status != 401 {
		t.Fatalf("published bad signature answered %d, want 401", status)
	}
}

func TestWebhookDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	// A pool on a port where nothing listens: every query fails to connect.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, _ := postgres.New(pool, webtest.TestKey)
	srv := httptest.NewServer(web.New(web.Config{Store: store,
		Sessions: store.SessionStore(), Ping: pool.Ping,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/webhooks/acme/crm", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("answered %d with Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, _ = http.Get(srv.URL + "/readyz")
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("/readyz answered %d, want 503", resp.StatusCode)
	}
}

func TestMetricsCountByKindAndOutcome(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	e.Outcome("acme", "crm", e.Secret, "m1", webtest.SnapshotBody("c-1", 1, `{}`))
	e.Outcome("acme", "crm", e.Secret, "m1", webtest.SnapshotBody("c-1", 1, `{}`))
	e.Post("/webhooks/acme/crm", []byte(`{}`), nil)
	resp, err := http.Get(e.Srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	for _, want := range []string{
		`tidemark_events_total{kind="standard",outcome="applied"} 1`,
		`tidemark_events_total{kind="standard",outcome="duplicate"} 1`,
		`tidemark_deliveries_total{kind="standard",status="200"} 2`,
		`tidemark_deliveries_total{kind="standard",status="401"} 1`,
		`tidemark_ingest_duration_seconds_count{kind="standard"} 3`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, "acme") {
		t.Error("/metrics carries a tenant name; labels must not be per tenant")
	}
}
