package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/internal/queue"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web"
)

// setupQueued is setup in queued mode (serve --queue) on q, with the
// queue's gauges on /metrics.
func setupQueued(t *testing.T, q *queue.Queue) *env {
	t.Helper()
	store, err := postgres.New(testdb.New(t), testKey)
	if err != nil {
		t.Fatal(err)
	}
	s := web.New(web.Config{Services: web.ServicesOf(store), Sessions: store.SessionStore(), Ping: store.Pool().Ping,
		Logger: quietLog(), Queue: q, Collectors: []prometheus.Collector{q.Collector()}})
	e := &env{t: t, store: store, web: s, srv: httptest.NewServer(s.Handler())}
	t.Cleanup(e.srv.Close)
	e.secret = e.provider("acme", "crm")
	return e
}

// count runs a counting query.
func (e *env) count(sql string) int {
	e.t.Helper()
	var n int
	if err := e.store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestQueuedAnswers: in queued mode a delivery is answered once the queue
// stored it, as each kind's provider expects (standard 202 with the
// delivery id, HubSpot 200, Salesforce its Ack), nothing is written to the
// database, a provider's retry is stored once, and a refused delivery is
// answered as in synchronous mode and not queued.
func TestQueuedAnswers(t *testing.T) {
	t.Parallel()
	q := queuetest.New(t)
	e := setupQueued(t, q)
	ctx := context.Background()
	tenant := e.tenant("acme")

	body := snapshotBody("c-1", 1, `{"a":1}`)
	status, answer := e.deliver1("e-1", body)
	if status != http.StatusAccepted || answer["status"] != "queued" || answer["delivery_id"] == "" || len(answer) != 2 {
		t.Fatalf("standard delivery answered %d %v, want 202 with delivery_id and status queued", status, answer)
	}
	status, again := e.deliver1("e-1", body) // the provider's retry, signed afresh
	if status != http.StatusAccepted || again["status"] != "duplicate" {
		t.Errorf("retry answered %d %v, want 202 duplicate", status, again)
	}
	status, refused := e.deliver("acme", "crm", "whsec_"+"d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldA==", "e-2", body)
	if status != http.StatusUnauthorized || refused["error"] == "" {
		t.Errorf("bad signature answered %d %v, want 401 as in synchronous mode", status, refused)
	}

	e.hubspotProvider(nil)
	status, hs := e.hubspotPost(hubspotFixture(t, "batch_contact.json"), nil, time.Now())
	if status != http.StatusOK || hs["status"] != "queued" {
		t.Errorf("HubSpot batch answered %d %v, want 200 queued", status, hs)
	}
	e.sfProvider("sf", nil).acked(sfFixture(t, "contact.xml"))

	if st, err := q.State(ctx, tenant.ID); err != nil || st.Depth != 3 {
		t.Errorf("queue holds %+v, %v, want the 3 accepted deliveries", st, err)
	}
	if n := e.count(`SELECT count(*) FROM deliveries WHERE status < 400`) + e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d accepted deliveries and events written synchronously, want none", n)
	}

	metrics := e.metrics()
	for _, want := range []string{"tidemark_queue_depth 3", "tidemark_queue_up 1", "tidemark_queue_dead_letters 0", "tidemark_queue_oldest_seconds "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	_, doc := e.operator("ops@example.com", false, "acme").get("/t/acme")
	if got := strings.TrimSpace(text(doc, ".queue .queue-depth")); got != "3" {
		t.Errorf("overview shows %q queued, want 3", got)
	}
	if got := text(doc, ".queue .queue-oldest"); !strings.Contains(got, "Oldest queued") {
		t.Errorf("overview says %q of the oldest queued delivery", got)
	}
}

// TestQueueUnreachable: with the queue's server down, an accepted delivery
// is answered 503 with Retry-After and stored nowhere (never ingested
// synchronously instead); the overview says the queue cannot be reached.
func TestQueueUnreachable(t *testing.T) {
	t.Parallel()
	q, err := queue.Open(queue.Config{URL: "nats://127.0.0.1:1", Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	e := setupQueued(t, q)
	status, answer := e.deliver1("e-1", snapshotBody("c-1", 1, `{"a":1}`))
	if status != http.StatusServiceUnavailable || answer["error"] == "" {
		t.Errorf("answered %d %v, want 503", status, answer)
	}
	if n := e.count(`SELECT count(*) FROM deliveries`) + e.count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d rows written, want none", n)
	}
	if !strings.Contains(e.metrics(), "tidemark_queue_up 0") {
		t.Error("/metrics does not say the queue is down")
	}
	_, doc := e.operator("ops@example.com", false, "acme").get("/t/acme")
	if got := text(doc, ".queue"); !strings.Contains(got, "cannot be reached") {
		t.Errorf("overview's queue card says %q", got)
	}
}

// metrics fetches /metrics.
func (e *env) metrics() string {
	e.t.Helper()
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
