package outbound_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/e2e"
)

// TestRetriesKeepRecordOrder: a change answered 500 twice is retried with
// backoff until answered 200, and only then is its record's next change
// sent; another record is not held up meanwhile. Every attempt is
// recorded.
func TestRetriesKeepRecordOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	tries := map[int64]int{}
	rc.setAnswer(func(a arrival, _ http.ResponseWriter, _ *http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		tries[a.position]++
		if a.record == "a" && a.revision == 1 && tries[a.position] <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	d := e.httpDestination(t, rc, 8)
	e.ingest(t, "a", 1) // position 1: fails twice
	e.ingest(t, "a", 2) // 2: waits for 1
	e.ingest(t, "b", 1) // 3: another record
	start := time.Now()
	e.run(t, fast())
	waitFor(t, 20*time.Second, "all three delivered", func() bool { _, got, _ := rc.got(); return len(got) == 3 })
	requests, delivered, _ := rc.got()
	var order []int64
	for _, a := range delivered {
		order = append(order, a.position)
	}
	if len(requests) != 5 || order[0] != 3 || order[1] != 1 || order[2] != 2 {
		t.Errorf("%d requests, delivered in order %v; want 5 requests, 3 first (not held up), then 1 and 2", len(requests), order)
	}
	// Backoff: 2 s after the first failure, 4 s after the second.
	if since := delivered[1].at.Sub(start); since < 5*time.Second {
		t.Errorf("change 1 delivered %s after the start, before its backoff of 2 s + 4 s", since)
	}
	for _, a := range requests {
		if a.position == 2 && a.at.Before(delivered[1].at) {
			t.Errorf("change 2 was sent before change 1 of its record was answered 2xx")
		}
	}
	// Attempts are recorded once their answers are read, a moment after
	// the receiver counted the requests.
	waitFor(t, 30*time.Second, "five attempts recorded", func() bool { return len(e.attempts(t, d.ID)) >= 5 })
	var statuses []int
	for _, at := range e.attempts(t, d.ID) {
		if at.Position == 1 {
			statuses = append(statuses, at.Status)
			if at.Status == 500 && !strings.Contains(at.Error, "500") {
				t.Errorf("attempt error %q does not name the status", at.Error)
			}
		}
	}
	if len(statuses) != 3 || statuses[0] != 500 || statuses[1] != 500 || statuses[2] != 200 {
		t.Errorf("attempts of change 1: %v, want 500 500 200", statuses)
	}
}

// TestRetryAfterIsHonoured: an answer with Retry-After: 3 is not retried
// before 3 s (the backoff alone would be 2 s).
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	var once sync.Once
	rc.setAnswer(func(_ arrival, w http.ResponseWriter, _ *http.Request) int {
		status := http.StatusOK
		once.Do(func() {
			w.Header().Set("Retry-After", "3")
			status = http.StatusServiceUnavailable
		})
		return status
	})
	e.httpDestination(t, rc, 8)
	e.ingest(t, "a", 1)
	e.run(t, fast())
	waitFor(t, 15*time.Second, "delivered", func() bool { _, got, _ := rc.got(); return len(got) == 1 })
	requests, _, _ := rc.got()
	if len(requests) != 2 {
		t.Fatalf("%d requests, want 2", len(requests))
	}
	if gap := requests[1].at.Sub(requests[0].at); gap < 3*time.Second {
		t.Errorf("retried %s after Retry-After: 3", gap)
	}
}

// TestNoAnswerIsATimeout: a destination that never answers gets an attempt
// recorded as a timeout after 10 s.
func TestNoAnswerIsATimeout(t *testing.T) {
	e2e.Require(t, "a real 10 s wait for a destination that does not answer")
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setAnswer(func(_ arrival, _ http.ResponseWriter, r *http.Request) int {
		<-r.Context().Done()
		return http.StatusOK
	})
	d := e.httpDestination(t, rc, 8)
	e.ingest(t, "a", 1)
	o := fast()
	o.LeaseTTL = 30 * time.Second // sends are cut off when the lease would end
	e.run(t, o)
	var at []stream.DestinationAttempt
	waitFor(t, 20*time.Second, "an attempt", func() bool { at = e.attempts(t, d.ID); return len(at) > 0 })
	if at[0].Status != 0 || !strings.Contains(at[0].Error, "timeout") || at[0].Duration < 9*time.Second {
		t.Errorf("attempt %+v, want status 0, a timeout after 10 s", at[0])
	}
}

// TestGivesUpAfterThreeDays: a change failing since more than
// DestinationGiveUp makes the destination failing at its next failure;
// the sender stops sending it; resumed, it delivers.
func TestGivesUpAfterThreeDays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	var mu sync.Mutex
	status := http.StatusInternalServerError
	rc.setAnswer(func(arrival, http.ResponseWriter, *http.Request) int { mu.Lock(); defer mu.Unlock(); return status })
	d := e.httpDestination(t, rc, 8)
	e.ingest(t, "a", 1)
	e.run(t, fast())
	ctx := context.Background()
	waitFor(t, 10*time.Second, "a first failure", func() bool { return len(e.attempts(t, d.ID)) > 0 })
	if _, err := e.store.Pool().Exec(ctx, `UPDATE destination_queue SET first_failed_at = now() - interval '73 hours'
		WHERE tenant_id = $1 AND destination_id = $2`, e.p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "failing", func() bool {
		got, err := e.store.Destination(ctx, e.p.TenantID, d.ID)
		return err == nil && got.Status == stream.DestinationFailing
	})
	got, _ := e.store.Destination(ctx, e.p.TenantID, d.ID)
	if !strings.Contains(got.StatusReason, "500") {
		t.Errorf("status reason %q does not say why", got.StatusReason)
	}
	requests, _, _ := rc.got()
	time.Sleep(4 * time.Second) // two backoffs
	if again, _, _ := rc.got(); len(again) != len(requests) {
		t.Errorf("%d requests after the destination was failing", len(again)-len(requests))
	}
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if err := e.store.ResumeDestination(asCLI, e.p.TenantID, d.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "delivered after resume", func() bool { _, got, _ := rc.got(); return len(got) == 1 })
}

// TestPrivateAddressIsRefused: a destination without allow_private that
// points at a loopback address is never reached, and its attempts say why.
func TestPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	d, _ := e.destination(t, stream.NewDestination{URL: rc.srv.URL + "/hook"})
	e.ingest(t, "a", 1)
	e.run(t, fast())
	var at []stream.DestinationAttempt
	waitFor(t, 10*time.Second, "an attempt", func() bool { at = e.attempts(t, d.ID); return len(at) > 0 })
	if requests, _, _ := rc.got(); len(requests) > 0 || at[0].Status != 0 || !strings.Contains(at[0].Error, "private") {
		t.Errorf("%d requests reached the server; attempt %+v, want a refused private address", len(requests), at[0])
	}
}
