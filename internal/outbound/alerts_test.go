package outbound_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/whsig"
)

// The alert tests write alerts and alert events with SQL, as the
// evaluator does (one writer, in commit order), and receive them on a
// local server.

// fire inserts a firing alert of tenant and its alert.fired event, and
// returns the alert's id.
func (e env) fire(t testing.TB, tenantID int64, rule, provider, summary string, value int64) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := e.pool.QueryRow(ctx, `
INSERT INTO alerts (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, started_at)
VALUES ($1, $2, $3, $3, $4, $5, 1, 21600, now()) RETURNING id`, tenantID, rule, provider, summary, value).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO alert_events (tenant_id, alert_id, type, at) VALUES ($1, $2, 'alert.fired', now())`,
		tenantID, id); err != nil {
		t.Fatal(err)
	}
	return id
}

// resolve resolves alert id with value and adds its alert.resolved event.
func (e env) resolve(t testing.TB, tenantID, id, value int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `UPDATE alerts SET resolved_at = now(), resolved_value = $3 WHERE tenant_id = $1 AND id = $2`,
		tenantID, id, value); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO alert_events (tenant_id, alert_id, type, at) VALUES ($1, $2, 'alert.resolved', now())`,
		tenantID, id); err != nil {
		t.Fatal(err)
	}
}

// message is a request an alertReceiver got.
type message struct {
	header http.Header
	body   []byte
	at     time.Time
	status int
}

// alertReceiver records every request, verified with secret, and answers
// with answer (nil: 200).
type alertReceiver struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	secret   string
	messages []message
	answer   func(n int, w http.ResponseWriter) int // n: requests before this one
}

func newAlertReceiver(t testing.TB) *alertReceiver {
	rc := &alertReceiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err := whsig.Verify(rc.secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			rc.t.Errorf("signature: %v", err)
		}
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(len(rc.messages), w)
		}
		rc.messages = append(rc.messages, message{header: r.Header.Clone(), body: body, at: time.Now(), status: status})
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *alertReceiver) got() []message {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]message(nil), rc.messages...)
}

// delivered are the bodies answered 2xx, in arrival order.
func (rc *alertReceiver) delivered() []message {
	var out []message
	for _, m := range rc.got() {
		if m.status < 300 {
			out = append(out, m)
		}
	}
	return out
}

// alertDestination creates a destination of tenant posting to rc.
func (e env) alertDestination(t testing.TB, tenantID int64, rc *alertReceiver, nd stream.NewDestination) stream.Destination {
	t.Helper()
	nd.URL, nd.AllowPrivate = rc.srv.URL+"/hook", true
	d, secret, err := e.store.CreateDestination(asCLI, tenantID, nd)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	return d
}

// alertMessage is a standard alert message as a consumer reads it.
type alertMessage struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		ID         int64           `json:"id"`
		Rule       string          `json:"rule"`
		Provider   *string         `json:"provider"`
		Summary    string          `json:"summary"`
		Value      int64           `json:"value"`
		Threshold  int64           `json:"threshold"`
		Window     string          `json:"window"`
		StartedAt  string          `json:"started_at"`
		ResolvedAt json.RawMessage `json:"resolved_at"`
	} `json:"data"`
}

func decodeAlert(t testing.TB, body []byte) alertMessage {
	t.Helper()
	var m alertMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("alert message %s: %v", body, err)
	}
	return m
}

// TestAlertEventsReachSubscribedDestinations: a destination subscribed to
// alert.* receives its tenant's alert events fired then resolved, in
// order, as signed standard messages, and none from before it was made;
// a destination of record types gets the change and no alert; another
// tenant's destination gets only its own tenant's alerts.
func TestAlertEventsReachSubscribedDestinations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := e.p.TenantID
	other, err := e.store.CreateTenant(asCLI, "globex", "")
	if err != nil {
		t.Fatal(err)
	}
	old := e.fire(t, acme, "conflicts_open", "", "Before the destination was made.", 1)
	e.resolve(t, acme, old, 0)

	alerts, records, others := newAlertReceiver(t), newReceiver(t), newAlertReceiver(t)
	da := e.alertDestination(t, acme, alerts, stream.NewDestination{Types: []string{"alert.*"}})
	dr := e.httpDestination(t, records, 8)
	e.alertDestination(t, other.ID, others, stream.NewDestination{Types: []string{"alert.*", "record.*"}})

	id := e.fire(t, acme, "provider_silent", "crm", "crm has sent no authenticated delivery for 6h0m0s.", 21600)
	e.ingest(t, "c1", 1)
	e.resolve(t, acme, id, 0)
	otherID := e.fire(t, other.ID, "refusals", "", "globex refused.", 20)
	e.run(t, fast())

	waitFor(t, 15*time.Second, "fired and resolved at the alert destination", func() bool { return len(alerts.delivered()) >= 2 })
	waitFor(t, 15*time.Second, "the change at the record destination", func() bool { _, got, _ := records.got(); return len(got) >= 1 })
	waitFor(t, 15*time.Second, "globex's alert at globex's destination", func() bool { return len(others.delivered()) >= 1 })
	time.Sleep(500 * time.Millisecond) // anything else would have come by now

	got := alerts.delivered()
	if len(got) != 2 {
		t.Fatalf("the alert destination got %d messages, want 2 (fired, resolved; not the older alert, not the change)", len(got))
	}
	fired, resolved := decodeAlert(t, got[0].body), decodeAlert(t, got[1].body)
	if fired.Type != "alert.fired" || resolved.Type != "alert.resolved" {
		t.Fatalf("types %s then %s, want alert.fired then alert.resolved", fired.Type, resolved.Type)
	}
	f := fired.Data
	if f.ID != id || f.Rule != "provider_silent" || f.Provider == nil || *f.Provider != "crm" || f.Value != 21600 ||
		f.Threshold != 1 || f.Window != "6h0m0s" || f.Summary != "crm has sent no authenticated delivery for 6h0m0s." ||
		string(f.ResolvedAt) != "null" {
		t.Errorf("fired data %+v (resolved_at %s)", f, f.ResolvedAt)
	}
	if _, err := time.Parse(time.RFC3339, fired.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", fired.Timestamp, err)
	}
	r := resolved.Data
	var resolvedAt time.Time
	if err := json.Unmarshal(r.ResolvedAt, &resolvedAt); err != nil || r.ID != id || r.Value != 0 || r.StartedAt != f.StartedAt {
		t.Errorf("resolved data %+v (resolved_at %s: %v)", r, r.ResolvedAt, err)
	}
	if got[0].header.Get("webhook-id") == got[1].header.Get("webhook-id") ||
		!strings.HasPrefix(got[0].header.Get("webhook-id"), "alert_") {
		t.Errorf("webhook-ids %q and %q: want two distinct alert_ ids", got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"))
	}

	if _, recs, _ := records.got(); len(recs) != 1 {
		t.Errorf("the record destination got %d messages, want the one change and no alert", len(recs))
	}
	if theirs := others.got(); len(theirs) != 1 || decodeAlert(t, theirs[0].body).Data.ID != otherID {
		t.Errorf("globex's destination got %d messages, want only globex's alert", len(theirs))
	}

	// Attempts are recorded once their answers are read, a moment after
	// the receivers counted the requests.
	waitFor(t, 30*time.Second, "the attempts recorded", func() bool {
		return len(e.attempts(t, da.ID)) >= 2 && len(e.attempts(t, dr.ID)) >= 1
	})
	as := e.attempts(t, da.ID)
	if len(as) != 2 || as[0].Type != "alert.fired" || as[1].Type != "alert.resolved" || !as[0].Delivered() ||
		as[0].ChangeID != got[0].header.Get("webhook-id") {
		t.Errorf("attempts of the alert destination %+v, want alert.fired then alert.resolved, delivered, by webhook-id", as)
	}
	if as := e.attempts(t, dr.ID); len(as) != 1 || as[0].Type != "record.applied" {
		t.Errorf("attempts of the record destination %+v, want the change's", as)
	}
}

// TestAlertRetriesHonourRetryAfter: an alert answered 503 with Retry-After
// 3 is not retried before 3 s, then answered 500 waits its backoff of 4 s;
// the resolution is not sent before the firing was answered 2xx; every
// attempt is listed.
func TestAlertRetriesHonourRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newAlertReceiver(t)
	rc.answer = func(n int, w http.ResponseWriter) int {
		switch n {
		case 0:
			w.Header().Set("Retry-After", "3")
			return http.StatusServiceUnavailable
		case 1:
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	d := e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{Types: []string{"alert.fired", "alert.resolved"}})
	id := e.fire(t, e.p.TenantID, "refusals", "crm", "crm: 20 refused deliveries in 5m0s.", 20)
	e.resolve(t, e.p.TenantID, id, 3)
	e.run(t, fast())
	waitFor(t, 30*time.Second, "both delivered", func() bool { return len(rc.delivered()) == 2 })
	got := rc.got()
	if len(got) != 4 {
		t.Fatalf("%d requests, want 4 (503, 500, then fired and resolved 200)", len(got))
	}
	for i, want := range []string{"alert.fired", "alert.fired", "alert.fired", "alert.resolved"} {
		if m := decodeAlert(t, got[i].body); m.Type != want {
			t.Errorf("request %d is %s, want %s", i, m.Type, want)
		}
	}
	if gap := got[1].at.Sub(got[0].at); gap < 3*time.Second {
		t.Errorf("retried %s after a Retry-After of 3 s", gap)
	}
	if gap := got[2].at.Sub(got[1].at); gap < 4*time.Second {
		t.Errorf("retried %s after the second failure, before its backoff of 4 s", gap)
	}
	// The sender records an attempt once its answer is read, a moment
	// after the receiver counted the request (CI saw 3 of 4).
	waitFor(t, 30*time.Second, "four attempts recorded", func() bool { return len(e.attempts(t, d.ID)) >= 4 })
	var statuses []int
	for _, a := range e.attempts(t, d.ID) {
		statuses = append(statuses, a.Status)
		if a.Status == 503 && (!strings.Contains(a.Error, "503") || a.Type != "alert.fired") {
			t.Errorf("attempt %+v", a)
		}
	}
	if len(statuses) != 4 || statuses[0] != 503 || statuses[1] != 500 || statuses[2] != 200 || statuses[3] != 200 {
		t.Errorf("attempts %v, want 503 500 200 200", statuses)
	}
}

// TestSlackFormat: a slack destination gets {"text"} bodies, one line
// each, Slack's markup characters escaped, still signed.
func TestSlackFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newAlertReceiver(t)
	e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{Format: stream.FormatSlack})
	id := e.fire(t, e.p.TenantID, "provider_silent", "crm", "crm has sent no authenticated delivery for 6h0m0s.", 21600)
	e.resolve(t, e.p.TenantID, id, 0)
	e.fire(t, e.p.TenantID, "conflicts_open", "", "3 open conflicts\n<growing> & more.", 3)
	e.run(t, fast())
	waitFor(t, 15*time.Second, "three messages", func() bool { return len(rc.delivered()) == 3 })
	want := []string{
		`{"text":":rotating_light: Tidemark acme: crm has sent no authenticated delivery for 6h0m0s."}`,
		`{"text":":white_check_mark: Tidemark acme resolved: crm has sent no authenticated delivery for 6h0m0s."}`,
		`{"text":":rotating_light: Tidemark acme: 3 open conflicts &lt;growing&gt; &amp; more."}`,
	}
	for i, m := range rc.delivered() {
		if string(m.body) != want[i] {
			t.Errorf("body %d:\n%s\nwant\n%s", i, m.body, want[i])
		}
		if m.header.Get("webhook-signature") == "" || m.header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", m.header)
		}
	}
}

// TestAlertVerifiesWithStandardWebhooks: the Standard Webhooks reference
// library (npm standardwebhooks) verifies an alert message as a consumer
// would, and refuses it with another secret.
func TestAlertVerifiesWithStandardWebhooks(t *testing.T) {
	t.Parallel()
	e2e.Require(t, "node and standardwebhooks")
	e := newEnv(t)
	rc := newAlertReceiver(t)
	e.alertDestination(t, e.p.TenantID, rc, stream.NewDestination{Types: []string{"alert.*"}})
	e.fire(t, e.p.TenantID, "dead_letters", "", "2 dead letters in 1h0m0s.", 2)
	e.run(t, fast())
	waitFor(t, 15*time.Second, "the alert", func() bool { return len(rc.delivered()) == 1 })
	m := rc.delivered()[0]
	rc.mu.Lock()
	secret := rc.secret
	rc.mu.Unlock()
	if err := verifyWithNode(t, secret, m.header, m.body); err != nil {
		t.Errorf("the library refused the alert message: %v", err)
	}
	if err := verifyWithNode(t, whsig.NewSecret(), m.header, m.body); err == nil {
		t.Error("the library accepted the message with a secret that did not sign it")
	}
}

// verifyWithNode runs internal/whsig's verify.mjs (the reference library)
// on a message: nil when the library accepts it.
func verifyWithNode(t *testing.T, secret string, h http.Header, body []byte) error {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "whsig", "testdata", "standardwebhooks"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); err != nil {
		t.Fatal("standardwebhooks is not installed: run npm ci --prefix internal/whsig/testdata/standardwebhooks")
	}
	headers := map[string]string{}
	for name := range h {
		headers[strings.ToLower(name)] = h.Get(name)
	}
	in, err := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(body)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	verify := exec.CommandContext(ctx, node, "verify.mjs")
	verify.Dir = dir
	verify.Stdin = bytes.NewReader(in)
	out, err := verify.CombinedOutput()
	if reason, refused := strings.CutPrefix(string(out), "refused: "); refused && err != nil {
		return &refusal{strings.TrimSpace(reason)}
	}
	if err != nil || len(out) > 0 {
		t.Fatalf("node verify.mjs: %v %s", err, out)
	}
	return nil
}

type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }
