package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

// The crash test's load: signed deliveries to a real tidemark serve
// process, which the test kills with SIGKILL and starts again.

// Names of the crash test's tenant and providers.
const (
	crashTenant   = "crash"
	crashStandard = "crm" // kind standard: one event per delivery
	crashHubSpot  = "hs"  // kind hubspot: batches of several events
)

// crashRecord names a record: its provider and object id (all contacts).
type crashRecord struct{ provider, objectID string }

// crashDelivery is one delivery of the load, sent with the same body and
// ids every time; only the signature's timestamp changes.
type crashDelivery struct {
	provider string
	id       string // webhook-id of a standard delivery
	body     []byte
	records  []crashRecord // of its events, in order
	order    float64       // place in the sending order
}

// crashLoad is the deliveries of a run and the highest revision each
// record was sent.
type crashLoad struct {
	deliveries []crashDelivery
	maxRev     map[crashRecord]int64
	events     int
}

// newCrashLoad builds the load: revisions 1..8 of 50 standard contacts and
// 1..12 of 10 HubSpot contacts (one jobtitle property, so each record has
// one revision guard) in batches of one to six events; a tenth of the
// events again under another id with the same content (redundant), and a
// tenth of the deliveries twice (duplicates). Roughly in revision order,
// with neighbouring revisions mixed, so some arrive stale.
func newCrashLoad(t *testing.T, rng *rand.Rand) crashLoad {
	t.Helper()
	l := crashLoad{maxRev: map[crashRecord]int64{}}
	for c := range 50 {
		rec := crashRecord{crashStandard, fmt.Sprintf("c-%02d", c)}
		for r := int64(1); r <= 8; r++ {
			body, err := snapshotDelivery("contact.snapshot", rec.objectID, strconv.FormatInt(r, 10),
				fmt.Sprintf(`{"job_title":"title %d","n":%d}`, r, r))
			if err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("crash-%s-r%d", rec.objectID, r)
			l.add(crashDelivery{provider: crashStandard, id: id, body: body, records: []crashRecord{rec},
				order: float64(r) + 2*rng.Float64()}, r)
			if rng.IntN(10) == 0 {
				l.add(crashDelivery{provider: crashStandard, id: id + "-twin", body: body, records: []crashRecord{rec},
					order: float64(r) + 2*rng.Float64()}, r)
			}
		}
	}

	// HubSpot revisions are occurredAt, in milliseconds: an hour ago plus
	// a second per revision, so none lies in the future.
	type hsEvent struct {
		rec   crashRecord
		rev   int64
		raw   map[string]any
		order float64
	}
	var hs []hsEvent
	base := time.Now().Add(-time.Hour).UnixMilli()
	eventID := 5000
	for c := range 10 {
		objectID := 9000 + c
		rec := crashRecord{crashHubSpot, strconv.Itoa(objectID)}
		for r := int64(1); r <= 12; r++ {
			copies := 1
			if rng.IntN(10) == 0 {
				copies = 2 // a twin: the same change under another event id
			}
			for range copies {
				eventID++
				hs = append(hs, hsEvent{rec: rec, rev: r, order: float64(r) + 2*rng.Float64(), raw: map[string]any{
					"eventId": eventID, "subscriptionId": 7, "portalId": 4400, "appId": 15,
					"occurredAt": base + r*1000, "subscriptionType": "contact.propertyChange", "attemptNumber": 0,
					"objectId": objectID, "propertyName": "jobtitle", "propertyValue": fmt.Sprintf("title %d", r),
				}})
			}
		}
	}
	slices.SortFunc(hs, func(a, b hsEvent) int { return cmp.Compare(a.order, b.order) })
	for len(hs) > 0 {
		batch := hs[:min(len(hs), 1+rng.IntN(6))]
		hs = hs[len(batch):]
		// One lock order for every batch, so batches do not deadlock.
		slices.SortFunc(batch, func(a, b hsEvent) int {
			return cmp.Or(cmp.Compare(a.rec.objectID, b.rec.objectID), cmp.Compare(a.rev, b.rev))
		})
		d := crashDelivery{provider: crashHubSpot, order: batch[0].order}
		var raws []map[string]any
		for _, e := range batch {
			raws = append(raws, e.raw)
			d.records = append(d.records, e.rec)
			l.maxRev[e.rec] = max(l.maxRev[e.rec], base+e.rev*1000)
		}
		d.body, _ = json.Marshal(raws)
		l.add(d, 0)
	}

	for _, d := range slices.Clone(l.deliveries) {
		if rng.IntN(10) == 0 {
			d.order += rng.Float64()
			l.add(d, 0)
		}
	}
	slices.SortStableFunc(l.deliveries, func(a, b crashDelivery) int { return cmp.Compare(a.order, b.order) })
	return l
}

// add appends d; rev, when not 0, is the revision of its one event.
func (l *crashLoad) add(d crashDelivery, rev int64) {
	l.deliveries = append(l.deliveries, d)
	l.events += len(d.records)
	if rev != 0 {
		l.maxRev[d.records[0]] = max(l.maxRev[d.records[0]], rev)
	}
}

// crashAnswer is a 200 answer: the delivery id and each event's id and
// outcome, in order.
type crashAnswer struct {
	DeliveryID string `json:"delivery_id"`
	Results    []struct {
		EventID string `json:"event_id"`
		Outcome string `json:"outcome"`
	} `json:"results"`
}

// crashPass is what one pass over the load got: the answers by delivery
// index, and the deliveries sent but not answered when the server died.
type crashPass struct {
	acked    map[int]crashAnswer
	killed   bool
	inFlight []int
	retries  int64 // 429 and 503 answers, retried
	// afterStop counts the answers (answerText) that came once the server
	// was told to stop.
	afterStop map[string]int
}

// sendPass sends the load's deliveries in the given order (indexes into
// l.deliveries) with eight senders, each retrying 429 and 503. With
// killAfter > 0 it kills the server with SIGKILL a few random milliseconds
// after that many deliveries were acknowledged; senders then stop, and
// requests still open count as in flight.
func sendPass(t *testing.T, srv *child, l crashLoad, secrets map[string]string, order []int, killAfter int) crashPass {
	t.Helper()
	return sendPassStopping(t, srv, l, secrets, order, killAfter, srv.kill)
}

// sendPassStopping is sendPass stopping the server with stop, and counting
// in the pass's afterStop what each request answered once stop was called.
func sendPassStopping(t *testing.T, srv *child, l crashLoad, secrets map[string]string, order []int, killAfter int, stop func()) crashPass {
	t.Helper()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var (
		mu      sync.Mutex
		pass    = crashPass{acked: map[int]crashAnswer{}, afterStop: map[string]int{}}
		next    atomic.Int64
		acks    atomic.Int64
		killed  atomic.Bool
		retries atomic.Int64
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for !killed.Load() {
				n := int(next.Add(1) - 1)
				if n >= len(order) {
					return
				}
				i := order[n]
				answer, ok := sendUntilAnswered(t, client, srv.base, l.deliveries[i], secrets, &killed, &retries, func(what string) {
					mu.Lock()
					defer mu.Unlock()
					pass.afterStop[what]++
				})
				mu.Lock()
				if ok {
					pass.acked[i] = answer
				} else if killed.Load() {
					pass.inFlight = append(pass.inFlight, i)
				}
				mu.Unlock()
				if ok && acks.Add(1) == int64(killAfter) {
					time.Sleep(time.Duration(rand.IntN(25_000)) * time.Microsecond)
					killed.Store(true)
					stop()
				}
			}
		})
	}
	wg.Wait()
	pass.retries, pass.killed = retries.Load(), killed.Load()
	slices.Sort(pass.inFlight)
	return pass
}

// sendUntilAnswered posts d, signed afresh on each attempt, until it is
// answered 200 (ok). It gives up when the server was killed, and fails the
// test on any other answer or when the server stays unreachable.
func sendUntilAnswered(t *testing.T, client *http.Client, base string, d crashDelivery, secrets map[string]string,
	killed *atomic.Bool, retries *atomic.Int64, afterStop func(what string)) (crashAnswer, bool) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, body, err := postSigned(client, base, d, secrets[d.provider])
		if killed.Load() {
			afterStop(answerText(status, body, err))
		}
		switch {
		case killed.Load() && (err != nil || status != http.StatusOK):
			return crashAnswer{}, false
		case err == nil && status == http.StatusOK:
			var a crashAnswer
			if err := json.Unmarshal(body, &a); err != nil || a.DeliveryID == "" || len(a.Results) != len(d.records) {
				t.Errorf("delivery %s answered 200 with %q (%v), want a delivery id and %d results", d.label(), body, err, len(d.records))
				return crashAnswer{}, false
			}
			return a, true
		case err == nil && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable:
			t.Errorf("delivery %s answered %d: %s", d.label(), status, body)
			return crashAnswer{}, false
		case time.Now().After(deadline):
			t.Errorf("delivery %s not answered within 3 minutes: %d %v", d.label(), status, err)
			return crashAnswer{}, false
		}
		retries.Add(1)
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	}
}

// answerText is an answer as afterStop counts it: the status and the body
// of a refusal, or that no answer came.
func answerText(status int, body []byte, err error) string {
	switch {
	case err != nil:
		return "no answer"
	case status == http.StatusOK:
		return "200"
	}
	return fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
}

// postSigned sends one attempt of d, signed as its provider's kind signs:
// Standard Webhooks over id, timestamp and body, or HubSpot v3 over method,
// URL, body and timestamp.
func postSigned(client *http.Client, base string, d crashDelivery, secret string) (int, []byte, error) {
	url := base + "/webhooks/" + crashTenant + "/" + d.provider
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if d.provider == crashHubSpot {
		ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
		req.Header.Set("X-HubSpot-Request-Timestamp", ts)
		req.Header.Set("X-HubSpot-Signature-v3", provider.SignHubSpotV3(secret, http.MethodPost, url, d.body, ts))
	} else {
		ts := time.Now().Unix()
		sig, err := provider.SignStandard(secret, d.id, ts, d.body)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("webhook-id", d.id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", sig)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// label names d in messages.
func (d crashDelivery) label() string {
	if d.id != "" {
		return d.id
	}
	return fmt.Sprintf("%s batch of %d at %v", d.provider, len(d.records), d.records[0])
}
