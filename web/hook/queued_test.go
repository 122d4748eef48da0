package hook_test

import (
	"context"
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
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// setupQueued is setup in queued mode (serve --queue) on q, with the
// queue's gauges on /metrics.
func setupQueued(t *testing.T, q *queue.Queue) *webtest.Env {
	t.Helper()
	store, err := postgres.New(testdb.New(t), webtest.TestKey)
	if err != nil {
		t.Fatal(err)
	}
	s := web.New(web.Config{Store: store, Sessions: store.SessionStore(), Ping: store.Pool().Ping,
		Logger: webtest.QuietLog(), Queue: q, Collectors: []prometheus.Collector{q.Collector()}})
	e := &webtest.Env{T: t, Store: store, Web: s, Srv: httptest.NewServer(s.Handler())}
	t.Cleanup(e.Srv.Close)
	e.Secret = e.Provider("acme", "crm")
	return e
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
	tenant := e.Tenant("acme")

	body := webtest.SnapshotBody("c-1", 1, `{"a":1}`)
	status, answer := e.Deliver1("e-1", body)
	if status != http.StatusAccepted || answer["status"] != "queued" || answer["delivery_id"] == "" || len(answer) != 2 {
		t.Fatalf("standard delivery answered %d %v, want 202 with delivery_id and status queued", status, answer)
	}
	status, again := e.Deliver1("e-1", body) // the provider's retry, signed afresh
	if status != http.StatusAccepted || again["status"] != "duplicate" {
		t.Errorf("retry answered %d %v, want 202 duplicate", status, again)
	}
	status, refused := e.Deliver("acme", "crm", "whsec_"+"d3Jvbmcgc2VjcmV0IHdyb25nIHNlY3JldA==", "e-2", body)
	if status != http.StatusUnauthorized || refused["error"] == "" {
		t.Errorf("bad signature answered %d %v, want 401 as in synchronous mode", status, refused)
	}

	webtest.HubspotProvider(e, nil)
	status, hs := webtest.HubspotPost(e, hubspotFixture(t, "batch_contact.json"), nil, time.Now())
	if status != http.StatusOK || hs["status"] != "queued" {
		t.Errorf("HubSpot batch answered %d %v, want 200 queued", status, hs)
	}
	webtest.SfProvider(e, "sf", nil).Acked(webtest.SfFixture(t, "contact.xml"))

	if st, err := q.State(ctx, tenant.ID); err != nil || st.Depth != 3 {
		t.Errorf("queue holds %+v, %v, want the 3 accepted deliveries", st, err)
	}
	if n := e.Count(`SELECT count(*) FROM deliveries WHERE status < 400`) + e.Count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d accepted deliveries and events written synchronously, want none", n)
	}

	metrics := e.Metrics()
	for _, want := range []string{"tidemark_queue_depth 3", "tidemark_queue_up 1", "tidemark_queue_dead_letters 0", "tidemark_queue_oldest_seconds "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	_, doc := e.Operator("ops@example.com", false, "acme").Get("/t/acme")
	if got := strings.TrimSpace(webtest.Text(doc, ".queue .queue-depth")); got != "3" {
		t.Errorf("overview shows %q queued, want 3", got)
	}
	if got := webtest.Text(doc, ".queue .queue-oldest"); !strings.Contains(got, "Oldest queued") {
		t.Errorf("overview says %q of the oldest queued delivery", got)
	}
}

// TestQueueUnreachable: with the queue's server down, an accepted delivery
// is answered 503 with Retry-After and stored nowhere (never ingested
// synchronously instead); the overview says the queue cannot be reached.
func TestQueueUnreachable(t *testing.T) {
	t.Parallel()
	q, err := queue.Open(queue.Config{URL: "nats://127.0.0.1:1", Keys: queuetest.Keys, Logger: webtest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	e := setupQueued(t, q)
	status, answer := e.Deliver1("e-1", webtest.SnapshotBody("c-1", 1, `{"a":1}`))
	if status != http.StatusServiceUnavailable || answer["error"] == "" {
		t.Errorf("answered %d %v, want 503", status, answer)
	}
	if n := e.Count(`SELECT count(*) FROM deliveries`) + e.Count(`SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d rows written, want none", n)
	}
	if !strings.Contains(e.Metrics(), "tidemark_queue_up 0") {
		t.Error("/metrics does not say the queue is down")
	}
	_, doc := e.Operator("ops@example.com", false, "acme").Get("/t/acme")
	if got := webtest.Text(doc, ".queue"); !strings.Contains(got, "cannot be reached") {
		t.Errorf("overview's queue card says %q", got)
	}
}
