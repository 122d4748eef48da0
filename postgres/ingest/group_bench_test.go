package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// BenchmarkGroupCommit sends single-event deliveries from 1, 8 and 32
// concurrent senders, each waiting for its answer before sending again,
// and writes them by group commit (what Ingest does) or in a transaction
// of each delivery's own, in the same command: the second is the baseline
// that shows whether grouping adds latency at light load. It reports
// events/s and each delivery's p50 and p99.
//
//	go test ./postgres/ingest -run '^$' -bench GroupCommit -benchtime 4000x
func BenchmarkGroupCommit(b *testing.B) {
	for _, senders := range []int{1, 8, 32} {
		for _, grouped := range []bool{true, false} {
			name := fmt.Sprintf("senders=%d/write=alone", senders)
			if grouped {
				name = fmt.Sprintf("senders=%d/write=grouped", senders)
			}
			b.Run(name, func(b *testing.B) { benchmarkWrite(b, senders, grouped, true) })
		}
	}
}

// BenchmarkChangeFeedCost is the change feed's cost on ingest: 32 senders
// with and without the changes statement, twice in turn, in one command.
//
//	go test ./postgres/ingest -run '^$' -bench ChangeFeedCost -benchtime 6000x
func BenchmarkChangeFeedCost(b *testing.B) {
	for round := range 2 {
		for _, changes := range []bool{false, true} {
			b.Run(fmt.Sprintf("round=%d/changes=%v", round+1, changes), func(b *testing.B) { benchmarkWrite(b, 32, true, changes) })
		}
	}
}

// benchmarkWrite measures senders writing single-event deliveries, grouped
// or alone, with or without their changes.
func benchmarkWrite(b *testing.B, senders int, grouped, changes bool) {
	s := storeConfigured(b, testdb.NewURL(b), func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.AfterConnect = 16, ingest.PrepareIngest // as serve's ingest pool
	})
	ctx := asTest(context.Background())
	t, _ := s.CreateTenant(ctx, "acme", "")
	if _, err := s.ConnectProvider(ctx, t.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
		b.Fatal(err)
	}
	p, _ := s.Endpoint(ctx, "acme", "crm")
	// The first delivery creates the scope; the endpoint read after it
	// knows the scope, as serve's cached endpoint does.
	if _, err := s.Ingest(ctx, delivery(p), p, []domain.Event{event("first", "c-first", 1, `{"v":1}`)}); err != nil {
		b.Fatal(err)
	}
	p, _ = s.Endpoint(ctx, "acme", "crm")
	s.SetWithoutChanges(!changes)
	write := s.Ingest
	if !grouped {
		write = s.IngestAlone
	}
	// Every connection of the pool made and prepared before the clock
	// starts, so that neither way of writing pays for that.
	var conns []*pgxpool.Conn
	for range s.Pool().Config().MaxConns {
		c, err := s.Pool().Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	var sent atomic.Int64
	latencies := make([][]time.Duration, senders)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := sent.Add(1); i <= int64(b.N); i = sent.Add(1) {
				e := event(fmt.Sprintf("e%d", i), fmt.Sprintf("c%d", i%20000), i, `{"v":1}`)
				began := time.Now()
				if _, err := write(ctx, delivery(p), p, []domain.Event{e}); err != nil {
					b.Error(err)
					return
				}
				latencies[w] = append(latencies[w], time.Since(began))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Sorted(slices.Values(slices.Concat(latencies...)))
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(quantileMillis(all, 0.50), "p50-ms")
	b.ReportMetric(quantileMillis(all, 0.99), "p99-ms")
}

// quantileMillis is the q-quantile of sorted latencies, in milliseconds.
func quantileMillis(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[int(q*float64(len(sorted)-1))]) / float64(time.Millisecond)
}
