package outbound_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCommitTo2xx: 32 senders ingest b.N single-event deliveries
// spread over 20,000 records, with no destination and then with one on
// the loopback (max_in_flight 8), in one command. It reports ingest
// events/s of each, and for the destination the commit-to-2xx latency
// (p50, p99, and p99 of the last tenth in arrival order, which grows when
// the sender falls behind) and how long the last change took to arrive
// after the ingest ended.
//
//	go test ./internal/outbound -run '^$' -bench CommitTo2xx -benchtime 20000x
func BenchmarkCommitTo2xx(b *testing.B) {
	for _, destination := range []bool{false, true} {
		b.Run(fmt.Sprintf("destination=%v", destination), func(b *testing.B) { benchmarkCommitTo2xx(b, destination) })
	}
}

func benchmarkCommitTo2xx(b *testing.B, destination bool) {
	e := newEnv(b)
	rc := newReceiver(b)
	if destination {
		e.httpDestination(b, rc, 8)
		e.run(b, fast())
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				e.ingest(b, fmt.Sprint("c", i%20000), i)
			}
		})
	}
	wg.Wait()
	ingested := time.Now()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if !destination {
		return
	}
	waitFor(b, 5*time.Minute, "every change delivered", func() bool { _, got, _ := rc.got(); return len(got) >= b.N })
	b.StopTimer()
	_, delivered, _ := rc.got()
	lags := make([]time.Duration, len(delivered))
	for i, a := range delivered {
		lags[i] = a.at.Sub(a.commit)
	}
	last := slices.Clone(lags[len(lags)*9/10:])
	slices.Sort(lags)
	slices.Sort(last)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lags[len(lags)/2]), "p50-ms")
	b.ReportMetric(ms(lags[len(lags)*99/100]), "p99-ms")
	b.ReportMetric(ms(last[len(last)*99/100]), "last-tenth-p99-ms")
	b.ReportMetric(ms(delivered[len(delivered)-1].at.Sub(ingested)), "drain-ms")
}

// BenchmarkDrain: b.N changes of as many records wait in the feed before
// a sender starts; it reports how fast the sender delivers them
// (changes/s) with max_in_flight 8, the sender's own ceiling without
// ingest competing for the machine.
//
//	go test ./internal/outbound -run '^$' -bench Drain -benchtime 10000x
func BenchmarkDrain(b *testing.B) {
	e := newEnv(b)
	rc := newReceiver(b)
	e.httpDestination(b, rc, 8)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				e.ingest(b, fmt.Sprint("c", i), i)
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	e.run(b, fast())
	waitFor(b, 10*time.Minute, "every change delivered", func() bool { _, got, _ := rc.got(); return len(got) >= b.N })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}
