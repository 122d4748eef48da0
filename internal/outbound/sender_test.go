package outbound_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// checkOrder fails unless every one of want positions was delivered and,
// per record, the deliveries came in position order: a change may come
// again (at least once), but never after a later one of its record.
func checkOrder(t *testing.T, delivered []arrival, want int) {
	t.Helper()
	seen := map[int64]bool{}
	last := map[string]int64{}
	for _, a := range delivered {
		if a.position < last[a.record] {
			t.Errorf("record %s: change %d delivered after %d", a.record, a.position, last[a.record])
		}
		last[a.record] = a.position
		seen[a.position] = true
	}
	for p := int64(1); p <= int64(want); p++ {
		if !seen[p] {
			t.Errorf("change %d was never delivered", p)
		}
	}
}

// TestDeliversEveryChangeInRecordOrder: changes of many records, ingested
// while the sender runs, all arrive signed, each once, a record's in
// position order, several records at a time but never more than
// max_in_flight.
func TestDeliversEveryChangeInRecordOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	rc.setAnswer(func(arrival, http.ResponseWriter, *http.Request) int {
		time.Sleep(5 * time.Millisecond) // long enough for sends to overlap
		return http.StatusOK
	})
	e.httpDestination(t, rc, 8)
	e.run(t, fast())

	const records, revisions = 40, 5
	var wg sync.WaitGroup
	for r := range records {
		wg.Go(func() {
			for rev := int64(1); rev <= revisions; rev++ {
				e.ingest(t, fmt.Sprint("c", r), rev)
			}
		})
	}
	wg.Wait()
	waitFor(t, 30*time.Second, "every change delivered", func() bool {
		_, delivered, _ := rc.got()
		return len(delivered) >= records*revisions
	})
	time.Sleep(300 * time.Millisecond) // a repeat would come now
	requests, delivered, maxInFlight := rc.got()
	if len(requests) != records*revisions || len(delivered) != records*revisions {
		t.Errorf("%d requests, %d delivered, want %d each: each change once", len(requests), len(delivered), records*revisions)
	}
	checkOrder(t, delivered, records*revisions)
	for _, a := range delivered {
		if want := a.revision; want < 1 || want > revisions {
			t.Errorf("change %s has revision %d", a.id, a.revision)
		}
	}
	if maxInFlight < 2 || maxInFlight > 8 {
		t.Errorf("at most %d changes in flight at once, want 2 to 8", maxInFlight)
	}
	lags := make([]time.Duration, len(delivered))
	for i, a := range delivered {
		lags[i] = a.at.Sub(a.commit)
	}
	slices.Sort(lags)
	t.Logf("%d changes; at most %d in flight; commit to arrival p50 %s, p99 %s, max %s", len(delivered), maxInFlight,
		lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1])
}
