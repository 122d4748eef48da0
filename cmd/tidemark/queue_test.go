package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Queued mode's process-level tests: tidemark serve --queue and tidemark
// worker as child processes, on NATS JetStream.

// queuedSenders each own their records, so each record's deliveries are
// received in the order they were sent, and every event must be applied:
// any other outcome means the workers broke the order.
const queuedSenders = 16

// queuedLoad is the deliveries of each sender, in sending order.
type queuedLoad struct {
	bySender [queuedSenders][]crashDelivery
	n        int // deliveries
	events   int
	maxRev   map[crashRecord]int64
	revs     map[crashRecord]int // events per record
}

// newQueuedLoad builds about n deliveries: four in five standard snapshots
// (revisions 1, 2, ... of each sender's contacts), one in five HubSpot
// batches of one to three jobtitle changes of the sender's two HubSpot
// contacts, each later than the last.
func newQueuedLoad(n int) queuedLoad {
	l := queuedLoad{maxRev: map[crashRecord]int64{}, revs: map[crashRecord]int{}}
	base := time.Now().Add(-time.Hour).UnixMilli()
	eventID := 0
	for s := range queuedSenders {
		hsRev := int64(0)
		for i := range n/queuedSenders + min(1, max(0, n%queuedSenders-s)) {
			var d crashDelivery
			if i%5 == 4 {
				d = crashDelivery{provider: crashHubSpot}
				var raws []map[string]any
				for k := range 1 + i%3 {
					rec := crashRecord{crashHubSpot, strconv.Itoa(9000 + 2*s + k%2)}
					hsRev++
					eventID++
					raws = append(raws, map[string]any{"eventId": eventID, "subscriptionId": 7, "portalId": 4400, "appId": 15,
						"occurredAt": base + hsRev, "subscriptionType": "contact.propertyChange", "attemptNumber": 0,
						"objectId": 9000 + 2*s + k%2, "propertyName": "jobtitle", "propertyValue": fmt.Sprintf("title %d", hsRev)})
					d.records = append(d.records, rec)
					l.maxRev[rec] = base + hsRev
					l.revs[rec]++
				}
				d.body, _ = json.Marshal(raws)
			} else {
				rec := crashRecord{crashStandard, fmt.Sprintf("s%02d-c%02d", s, i%20)}
				rev := l.maxRev[rec] + 1
				d = crashDelivery{provider: crashStandard, id: fmt.Sprintf("q-%s-r%d", rec.objectID, rev), records: []crashRecord{rec}}
				d.body, _ = snapshotDelivery("contact.snapshot", rec.objectID, strconv.FormatInt(rev, 10), fmt.Sprintf(`{"n":%d}`, rev))
				l.maxRev[rec] = rev
				l.revs[rec]++
			}
			l.bySender[s] = append(l.bySender[s], d)
			l.n++
			l.events += len(d.records)
		}
	}
	return l
}

// queuedAnswer is a queued mode answer: 202 (standard) or 200 (HubSpot).
type queuedAnswer struct {
	DeliveryID string `json:"delivery_id"`
	Status     string `json:"status"`
}

// sendQueued sends every sender's deliveries in order and returns the
// delivery ids answered "queued". Each 503 is retried when retry is set
// (counted in retries), and fails the test otherwise; so does any other
// answer but a 2xx.
func sendQueued(t *testing.T, base string, l queuedLoad, secrets map[string]string, retry bool, retries *atomic.Int64,
	sent func(int64)) []string {
	t.Helper()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: queuedSenders}}
	defer client.CloseIdleConnections()
	var (
		mu     sync.Mutex
		queued []string
		acks   atomic.Int64
		wg     sync.WaitGroup
	)
	for s := range queuedSenders {
		wg.Go(func() {
			for _, d := range l.bySender[s] {
				deadline := time.Now().Add(2 * time.Minute)
				for {
					status, body, err := postSigned(client, base, d, secrets[d.provider])
					want := http.StatusAccepted
					if d.provider == crashHubSpot {
						want = http.StatusOK
					}
					var a queuedAnswer
					if err == nil && status == want && json.Unmarshal(body, &a) == nil && (a.Status == "queued" || a.Status == "duplicate") {
						if a.Status == "queued" {
							mu.Lock()
							queued = append(queued, a.DeliveryID)
							mu.Unlock()
						}
						sent(acks.Add(1))
						break
					}
					if !retry || (err == nil && status != http.StatusServiceUnavailable) || time.Now().After(deadline) {
						t.Errorf("delivery %s answered %d %s (%v), want %d queued", d.label(), status, body, err, want)
						return
					}
					retries.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return queued
}

// awaitApplied waits until the tenant has n deliveries logged.
func awaitApplied(t *testing.T, pool *pgxpool.Pool, tenantID int64, n int, workers ...*child) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for got := 0; ; {
		got = queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1`, tenantID)
		if got == n {
			return
		}
		if got > n || time.Now().After(deadline) {
			for _, w := range workers {
				t.Logf("worker's log:\n%s", tailLines(w.stderr.String(), 20))
			}
			t.Fatalf("%d deliveries logged, want %d", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkQueuedLog checks the database against the load once every delivery
// was applied: each answered delivery id is logged; each event is logged
// once and applied (its sender sent its record's revisions in order, so
// any other outcome is an order broken); each record was applied once per
// revision and holds the last; the counters count what the log holds.
func checkQueuedLog(t *testing.T, pool *pgxpool.Pool, tenantID int64, l queuedLoad, answered []string) {
	t.Helper()
	logged := map[string]bool{}
	var id string
	scanAll(t, pool, `SELECT id::text FROM deliveries WHERE tenant_id = $1 AND status = 200`, tenantID, []any{&id}, func() { logged[id] = true })
	for _, a := range answered {
		if !logged[a] {
			t.Errorf("delivery %s was answered queued and is not in the delivery log", a)
		}
	}
	if len(logged) != l.n {
		t.Errorf("%d deliveries logged, %d sent", len(logged), l.n)
	}
	outcomes := map[string]int{}
	var outcome string
	var n int
	scanAll(t, pool, `SELECT outcome, count(*) FROM events WHERE tenant_id = $1 GROUP BY outcome`, tenantID, []any{&outcome, &n},
		func() { outcomes[outcome] = n })
	if outcomes["applied"] != l.events || len(outcomes) != 1 {
		t.Errorf("event outcomes %v, want all %d events applied once", outcomes, l.events)
	}
	if got := queryInt(t, pool, `SELECT count(DISTINCT (provider_id, event_id)) FROM events WHERE tenant_id = $1`, tenantID); got != l.events {
		t.Errorf("%d distinct events logged, want %d", got, l.events)
	}
	if got := queryInt(t, pool, `SELECT coalesce(sum(n), 0)::int FROM outcome_counters WHERE tenant_id = $1 AND outcome = 'applied'`, tenantID); got != l.events {
		t.Errorf("the counters count %d applied events, want %d", got, l.events)
	}
	var rec crashRecord
	var revision int64
	var applications int
	seen := 0
	scanAll(t, pool, `SELECT p.name, r.object_id, r.revision, r.application_count
		FROM records r JOIN providers p ON p.tenant_id = r.tenant_id AND p.id = r.provider_id WHERE r.tenant_id = $1`, tenantID,
		[]any{&rec.provider, &rec.objectID, &revision, &applications}, func() {
			seen++
			if applications != l.revs[rec] || revision != l.maxRev[rec] {
				t.Errorf("record %v: applied %d times at revision %d, want %d times, revision %d", rec, applications, revision, l.revs[rec], l.maxRev[rec])
			}
		})
	if seen != len(l.revs) {
		t.Errorf("%d records stored, %d sent", seen, len(l.revs))
	}
}

// TestWorkerNeedsQueue: worker without --queue refuses to run, saying what
// to pass.
func TestWorkerNeedsQueue(t *testing.T) {
	t.Parallel()
	_, _, err := tidemark(t, map[string]string{}, "", "worker")
	if err == nil || !strings.Contains(err.Error(), "--queue (or TIDEMARK_QUEUE) is required") {
		t.Errorf("worker without --queue: %v", err)
	}
}
