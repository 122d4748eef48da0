package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/table"
	"github.com/tidemark/tidemark/internal/provider"
)

// loadResult is what the senders saw.
type loadResult struct {
	elapsed    time.Duration
	latencies  []time.Duration // of every answered request, sorted
	ok         int             // 200 answers
	statuses   map[int]int     // other answers
	transport  int             // requests that got no answer
	firstError string
}

func (r loadResult) failed() int {
	n := r.transport
	for _, c := range r.statuses {
		n += c
	}
	return n
}

func (r loadResult) perSecond() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// recorder collects the senders' observations. One mutex is enough at
// tens of thousands of requests per second, and lets the progress line see
// the latencies of the last second.
type recorder struct {
	mu sync.Mutex
	loadResult
}

func (r *recorder) record(latency time.Duration, status int, body []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.transport++
		if r.firstError == "" {
			r.firstError = err.Error()
		}
		return
	case status == http.StatusOK:
		r.ok++
	default:
		r.statuses[status]++
		if r.firstError == "" {
			r.firstError = fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
		}
	}
	r.latencies = append(r.latencies, latency)
}

// since returns the answers recorded after the first n, and the new count.
func (r *recorder) since(n int) ([]time.Duration, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.latencies[n:]), len(r.latencies)
}

// loadSource makes the signed deliveries of one provider kind. It is used
// by every sender at once.
type loadSource interface {
	// request is a delivery with ids never sent before.
	request(ctx context.Context) (*http.Request, error)
}

// senderLoads are one measurement's sources, one per tenant (ingest
// --tenants): each delivery is of one drawn at random, as the floor
// draws each transaction's tenant.
type senderLoads []loadSource

// pick is the source of the next delivery.
func (l senderLoads) pick() loadSource {
	if len(l) == 1 {
		return l[0]
	}
	return l[mathrand.IntN(len(l))]
}

// runLoad sends deliveries of loads from senders goroutines until duration
// has passed. Requests in flight at the end complete and count, and the
// rate is taken over the time until the last one answered.
func runLoad(ctx context.Context, senders int, duration time.Duration, loads senderLoads, progress io.Writer) loadResult {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Every sender keeps its connection: no reconnects in the measurement.
	transport.MaxIdleConnsPerHost = senders
	transport.MaxIdleConns = senders
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	defer transport.CloseIdleConnections()

	rec := &recorder{loadResult: loadResult{statuses: map[int]int{}}}
	start := time.Now()
	deadline := start.Add(duration)
	stopProgress := startProgress(rec, start, progress)
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() { runSender(ctx, client, loads, deadline, rec) })
	}
	wg.Wait()
	stopProgress()

	res := rec.loadResult
	res.elapsed = time.Since(start)
	slices.Sort(res.latencies)
	return res
}

// runSender sends one delivery at a time, as a provider's worker does.
func runSender(ctx context.Context, client *http.Client, loads senderLoads, deadline time.Time, rec *recorder) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		req, err := loads.pick().request(ctx)
		if err != nil {
			rec.record(0, 0, nil, err)
			return
		}
		begin := time.Now()
		status, body, retryAfter, err := do(client, req)
		if ctx.Err() != nil {
			return // interrupted: not a server error
		}
		rec.record(time.Since(begin), status, body, err)
		// Providers back off when told to (HubSpot, Standard Webhooks
		// senders): a sender that resent at once would measure a client
		// nobody runs.
		if retryAfter > 0 {
			select {
			case <-time.After(min(retryAfter, time.Until(deadline))):
			case <-ctx.Done():
			}
		}
	}
}

// standardLoad makes signed contact.snapshot deliveries, one event each,
// for the standard bench provider.
type standardLoad struct {
	target, secret string
	contacts       int
	// applying makes every delivery apply: delivery n carries revision n for
	// contact n mod contacts, so a contact's revisions only go up (its
	// deliveries are contacts apart, never in flight together). Otherwise
	// contact and revision are drawn like the floor script's, and some
	// events are stale.
	applying bool
	sent     atomic.Int64 // numbers the delivery ids
}

func (l *standardLoad) request(ctx context.Context) (*http.Request, error) {
	n := l.sent.Add(1)
	contact, revision := mathrand.IntN(l.contacts)+1, mathrand.IntN(1_000_000)+1
	if l.applying {
		contact, revision = int(n%int64(l.contacts))+1, int(n)
	}
	return benchRequest(ctx, l.target, l.secret, "bench-"+strconv.FormatInt(n, 10), contact, revision)
}

// benchRequest builds a signed contact.snapshot delivery of contact at
// revision r. The body is what tidemark send builds for the same event.
func benchRequest(ctx context.Context, target, secret, id string, contact, r int) (*http.Request, error) {
	snapshot := `{"company":"Co-` + strconv.Itoa(r) + `","job_title":"Director","lead_status":"customer"}`
	body, err := json.Marshal(map[string]any{"type": "contact.snapshot", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"data": map[string]any{"contact_id": "c-" + strconv.Itoa(contact), "revision": r, "snapshot": json.RawMessage(snapshot)}})
	if err != nil {
		return nil, err
	}
	return signedRequest(ctx, target, secret, id, body)
}

// signedRequest is a delivery of body to target, signed with Standard
// Webhooks under the provider's secret, as both benchmarks send it.
func signedRequest(ctx context.Context, target, secret, id string, body []byte) (*http.Request, error) {
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	return req, nil
}

// do sends req and reads the answer; the body is kept only for errors, and
// always drained so the connection is reused. retryAfter is the delay a 429
// or 503 asked for, 0 otherwise.
func do(client *http.Client, req *http.Request) (status int, body []byte, retryAfter time.Duration, err error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, 0, err
	}
	body, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, body, retryDelay(resp), nil
}

// retryDelay is the wait resp's Retry-After asks for (whole seconds), 0
// for none: the bench's senders honour it, as the providers they stand
// for do.
func retryDelay(resp *http.Response) time.Duration {
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// startProgress rewrites one status line every second with the last
// second's rate and p99; the returned func ends it with a newline.
func startProgress(rec *recorder, start time.Time, w io.Writer) func() {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		seen := 0
		last := start
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case now := <-ticker.C:
				var window []time.Duration
				window, seen = rec.since(seen)
				slices.Sort(window)
				rate := float64(len(window)) / now.Sub(last).Seconds()
				last = now
				fmt.Fprintf(w, "\r  %3ds  %s deliveries/s  p99 %s    ",
					int(now.Sub(start).Round(time.Second).Seconds()), table.Thousands(int64(rate+0.5)), table.CompactMillis(percentile(window, 0.99)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// percentile returns the nearest-rank q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
