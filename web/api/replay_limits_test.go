package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestReplayRefersToOriginalBody (M7): replays store no copy of the
// original's body, yet the inspector shows each replay with it.
func TestReplayRefersToOriginalBody(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	big := `{"job_title":"` + strings.Repeat("x", 900<<10) + `"}`
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, big))
	orig := answer["delivery_id"].(string)
	o, _ := e.DeliveryJSON(token, orig)
	var ids []string
	for range 20 {
		status, replayed := webtest.ReplayAPI(e, token, orig)
		if got := webtest.Outcome(t, status, replayed); got != "duplicate" {
			t.Fatalf("replay outcome %s", got)
		}
		ids = append(ids, replayed["delivery_id"].(string))
	}
	var stored int64
	if err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT coalesce(sum(octet_length(body)), 0) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Fatalf("replays stored %d bytes of bodies, want none", stored)
	}
	for _, id := range ids[:2] {
		d, _ := e.DeliveryJSON(token, id)
		if d["body"] != o["body"] || d["replay_of"] != orig {
			t.Fatalf("replay %s shows body of %d bytes, want the original's", id, len(d["body"].(string)))
		}
	}
}

// TestReplayJobAboveLimitNeedsConfirm (M7): a job of more than 10,000
// deliveries starts only with "confirm": true; the refusal names the count
// and the field.
func TestReplayJobAboveLimitNeedsConfirm(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	e.Exec(`INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, event_count, body, method,
            path, query, headers, client_address)
        SELECT tenant_id, gen_random_uuid(), received_at, provider_id, status, signature, event_count, body, method,
            path, query, headers, client_address
        FROM deliveries, generate_series(1, 10000) WHERE id = '` + answer["delivery_id"].(string) + `'`)
	status, body := webtest.StartReplay(e, token, `{"provider": "crm"}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, `10001 deliveries`)
	if msg := body["error"].(string); !strings.Contains(msg, `"confirm": true`) {
		t.Fatalf("refusal %q does not name the field", msg)
	}
	if status, body = webtest.StartReplay(e, token, `{"provider": "crm", "confirm": true}`); status != http.StatusAccepted ||
		body["total"] != float64(10001) {
		t.Fatalf("confirmed start: %d %v", status, body)
	}
}

// TestReplayJobCountIsTimed (L1): the job's count runs on the read pool
// under its statement timeout, so a slow count answers 503 instead of
// holding an ingest connection without end.
func TestReplayJobCountIsTimed(t *testing.T) {
	t.Parallel()
	e := webtest.SetupWith(t, 300*time.Millisecond, webtest.QuietLog())
	token := e.Token("acme")
	e.LockTable("deliveries")
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/api/v1/tenants/acme/replays", strings.NewReader(`{"provider": "crm"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, raw := e.Within(5*time.Second, req)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("start with the log locked: %d %s", resp.StatusCode, raw)
	}
}

// TestManualReplaysRateLimited (M7): replays by hand are budgeted per
// tenant; past the budget the answer is 429 with Retry-After, and other
// tenants are not affected.
func TestManualReplaysRateLimited(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	orig := answer["delivery_id"].(string)
	for i := range 30 {
		if status, body := webtest.ReplayAPI(e, token, orig); status != http.StatusOK {
			t.Fatalf("replay %d: %d %v", i+1, status, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, e.Srv.URL+"/api/v1/tenants/acme/deliveries/"+orig+"/replay", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, raw := e.Within(5*time.Second, req)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(raw), "too many replays") {
		t.Fatalf("31st replay: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}
	var n int
	e.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&n)
	if n != 30 {
		t.Fatalf("%d replays stored, want 30", n)
	}
}

// TestDeliveryReplaysPaged (M7): the inspector lists a delivery's replays
// a page at a time.
func TestDeliveryReplaysPaged(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	_, answer := e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{}`))
	orig := answer["delivery_id"].(string)
	webtest.ReplayOutcome(e, token, orig)
	e.Exec(`INSERT INTO deliveries (tenant_id, id, received_at, provider_id, status, signature, event_count, replay_of,
            method, path, query, headers, client_address)
        SELECT tenant_id, gen_random_uuid(), received_at + g * interval '1 ms', provider_id, status, signature, event_count,
            replay_of, method, path, query, headers, client_address
        FROM deliveries, generate_series(1, 59) AS g WHERE replay_of = '` + orig + `'`)
	d, _ := e.DeliveryJSON(token, orig)
	first, _ := d["replays"].([]any)
	cursor, _ := d["replays_next_cursor"].(string)
	if len(first) != 50 || cursor == "" {
		t.Fatalf("inspector lists %d replays, cursor %q; want 50 and a cursor", len(first), cursor)
	}
	status, body := e.Get("/api/v1/tenants/acme/deliveries/"+orig+"/replays?cursor="+url.QueryEscape(cursor), token)
	rest, _ := body["replays"].([]any)
	if status != http.StatusOK || len(rest) != 10 || body["next_cursor"] != nil {
		t.Fatalf("second page %d replays, next %v", len(rest), body["next_cursor"])
	}
	seen := map[any]bool{}
	for _, id := range append(first, rest...) {
		seen[id] = true
	}
	if len(seen) != 60 {
		t.Fatalf("%d distinct replays, want 60", len(seen))
	}
}
